-- Writer (outbox.md §5) on SQLite: the whole batch in ONE statement in the
-- caller's transaction. ?1 is a JSON array of rows; payloads travel as one
-- concatenated value ?2 cut by byte offset, so an empty payload is a
-- zero-length BLOB, never NULL. ON CONFLICT DO NOTHING leaves out rows that
-- meet an existing id or idempotency key (classified with
-- insert_existing.sql). ?3 is now (µs) for unset times, one value for the batch.
INSERT INTO {{t}} (id, topic, payload, payload_version, metadata, ordering_key, idempotency_key,
                   available_at, created_at, updated_at)
SELECT json_extract(value, '$.id'), json_extract(value, '$.topic'),
       COALESCE(CAST(substr(CAST(?2 AS BLOB), json_extract(value, '$.off'), json_extract(value, '$.len')) AS BLOB), x''),
       json_extract(value, '$.v'), json_extract(value, '$.m'), json_extract(value, '$.k'),
       json_extract(value, '$.i'), COALESCE(json_extract(value, '$.a'), ?3),
       COALESCE(json_extract(value, '$.c'), ?3), ?3
FROM json_each(?1)
WHERE true
ORDER BY key
ON CONFLICT DO NOTHING
RETURNING id, available_at, created_at
