-- T8, fenced. ?1 id, ?2 token, ?3 now µs, ?4 code, ?5 sanitised message.
UPDATE {{t}}
SET state = 'dead', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    dead_lettered_at = ?3, failure_count = MIN(failure_count + 1, 10000), last_error_code = ?4,
    last_error = ?5, updated_at = ?3
WHERE id = ?1 AND state = 'leased' AND lease_token = ?2 AND leased_until > ?3
RETURNING topic, claim_count, failure_count
