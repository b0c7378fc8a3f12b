-- Claim: a row that cannot be decoded is dead-lettered in the claim's own
-- transaction and left out. ?1 id, ?2 now µs.
UPDATE {{t}}
SET state = 'dead', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    dead_lettered_at = ?2, updated_at = ?2, failure_count = MIN(failure_count + 1, 10000),
    last_error_code = 'undecodable', last_error = 'the stored row could not be decoded'
WHERE id = ?1
