-- T5, fenced. ?1 id, ?2 token, ?3 now µs.
UPDATE {{t}}
SET state = 'delivered', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    delivered_at = ?3, updated_at = ?3, last_error_code = NULL, last_error = NULL
WHERE id = ?1 AND state = 'leased' AND lease_token = ?2 AND leased_until > ?3
RETURNING topic, claim_count, failure_count
