-- Inspect (§6.3): keyset pagination by (created_at, id) descending, strictly
-- before the cursor, so rows sharing a created_at are neither skipped nor
-- repeated. Never selects payload, metadata or the lease token.
-- $1 state or NULL, $2 topic or NULL, $3 cursor created_at µs or NULL, $4 cursor id, $5 limit,
-- $6 ordering key or NULL, $7 id prefix or NULL, $8 minimum age µs (created at
-- least that long before database now) or NULL. A prefix is compared as a
-- leading substring, never as a LIKE pattern, so no byte of it is a wildcard.
SELECT seq, xact_id::text, id, topic, payload_version, ordering_key, idempotency_key, state, claim_count,
       failure_count, US[available_at], US[created_at], US[updated_at], lease_owner, US[leased_until],
       US[delivered_at], US[dead_lettered_at], last_error_code, last_error
FROM {{t}}
WHERE ($1::text IS NULL OR state = $1::text)
  AND ($2::text IS NULL OR topic = $2::text)
  AND ($3::bigint IS NULL OR (created_at, id) < (TS[$3], $4::text))
  AND ($6::text IS NULL OR ordering_key = $6::text)
  AND ($7::text IS NULL OR left(id, length($7::text)) = $7::text)
  AND ($8::bigint IS NULL OR created_at <= clock_timestamp() - $8::bigint * interval '1 microsecond')
ORDER BY created_at DESC, id DESC
LIMIT $5
