-- Claim, T2/T3 on one candidate with its own fresh token. ?1 seq, ?2 owner,
-- ?3 token, ?4 now µs, ?5 lease µs.
UPDATE {{t}}
SET state = 'leased', lease_owner = ?2, lease_token = ?3, leased_until = ?4 + ?5,
    claim_count = MIN(claim_count + 1, 1000000), updated_at = ?4
WHERE seq = ?1
RETURNING {{cols}}
