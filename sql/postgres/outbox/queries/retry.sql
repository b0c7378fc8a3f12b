-- T6, fenced. available_at: now + $3 µs, or the later of $4 (µs) and now.
-- $1 id, $2 token, $5 code, $6 sanitised message.
UPDATE {{t}}
SET state = 'pending', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    available_at = CASE WHEN $3::bigint IS NOT NULL
                        THEN clock_timestamp() + $3::bigint * interval '1 microsecond'
                        ELSE GREATEST(TS[$4], clock_timestamp()) END,
    failure_count = LEAST(failure_count + 1, 10000), last_error_code = $5, last_error = $6,
    updated_at = clock_timestamp()
WHERE id = $1 AND state = 'leased' AND lease_token::text = $2 AND leased_until > clock_timestamp()
RETURNING topic, claim_count, failure_count
