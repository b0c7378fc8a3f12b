-- T8, fenced. $1 id, $2 token, $3 code, $4 sanitised message.
UPDATE {{t}}
SET state = 'dead', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    dead_lettered_at = clock_timestamp(), failure_count = LEAST(failure_count + 1, 10000),
    last_error_code = $3, last_error = $4, updated_at = clock_timestamp()
WHERE id = $1 AND state = 'leased' AND lease_token::text = $2 AND leased_until > clock_timestamp()
RETURNING topic, claim_count, failure_count
