-- T5, fenced (state leased, same token, lease unexpired at now). $1 id, $2 token.
UPDATE {{t}}
SET state = 'delivered', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    delivered_at = clock_timestamp(), updated_at = clock_timestamp(), last_error_code = NULL, last_error = NULL
WHERE id = $1 AND state = 'leased' AND lease_token::text = $2 AND leased_until > clock_timestamp()
RETURNING topic, claim_count, failure_count
