-- T7, fenced: back to pending now; counters and error fields kept. $1 id, $2 token.
UPDATE {{t}}
SET state = 'pending', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    available_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE id = $1 AND state = 'leased' AND lease_token::text = $2 AND leased_until > clock_timestamp()
RETURNING topic, claim_count, failure_count
