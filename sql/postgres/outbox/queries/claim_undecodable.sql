-- Claim: a row that cannot be decoded (only after manual edits) is
-- dead-lettered in the claim's own transaction and left out. $1 id.
UPDATE {{t}}
SET state = 'dead', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    dead_lettered_at = clock_timestamp(), updated_at = clock_timestamp(),
    failure_count = LEAST(failure_count + 1, 10000),
    last_error_code = 'undecodable', last_error = 'the stored row could not be decoded'
WHERE id = $1
