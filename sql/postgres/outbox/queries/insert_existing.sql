-- Writer: which of the ids the INSERT left out are held by a stored row
-- (duplicate_id); the others met an idempotency key.
SELECT id FROM {{t}} WHERE id = ANY($1::text[])
