-- Which of the ids $1 (text[]) are already taken (names the item of a batch
-- that failed with a primary-key conflict).
SELECT id FROM {{s}}{{ops}} WHERE id = ANY ($1::text[])
