-- Replay: T9 on every requested row (all found terminal). Positions are
-- kept. ?1 ids (JSON), ?2 now µs, ?3 available_at µs.
UPDATE {{t}}
SET state = 'pending', claim_count = 0, failure_count = 0, available_at = ?3, lease_owner = NULL,
    lease_token = NULL, leased_until = NULL, delivered_at = NULL, dead_lettered_at = NULL, last_error_code = NULL,
    last_error = NULL, updated_at = ?2
WHERE id IN (SELECT value FROM json_each(?1)) AND state IN ('delivered', 'dead')
