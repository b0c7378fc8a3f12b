-- T5 for many leases in one statement (mark_delivered_batch), each fenced
-- exactly as deliver.sql (state leased, same token, lease unexpired at now);
-- a row whose lease was lost is left as it is. The rows were locked first
-- (lock_many.sql), so "now" is read after every lock. $1 ids, $2 tokens (text[]).
UPDATE {{t}} q
SET state = 'delivered', lease_owner = NULL, lease_token = NULL, leased_until = NULL,
    delivered_at = clock_timestamp(), updated_at = clock_timestamp(), last_error_code = NULL, last_error = NULL
FROM unnest($1::text[], $2::text[]) AS r(id, token)
WHERE q.id = r.id AND q.state = 'leased' AND q.lease_token::text = r.token AND q.leased_until > clock_timestamp()
RETURNING q.id, q.topic, q.claim_count, q.failure_count
