-- T7, fenced: pending now; counters and error fields kept. ?1 id, ?2 token, ?3 now µs.
UPDATE {{t}}
SET state = 'pending', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    available_at = ?3, updated_at = ?3
WHERE id = ?1 AND state = 'leased' AND lease_token = ?2 AND leased_until > ?3
RETURNING topic, claim_count, failure_count
