-- A keyset page (op-queue.md §4.7): $1 status ('' = all), $2 limit, $3/$4
-- the cursor's (enqueued_at, id) (NULL: from the start). The contract is the
-- row comparison in the list order: strictly after the cursor, so pages
-- neither skip nor repeat rows, even while rows are inserted. $5 type ('' = all).
SELECT o.id, o.type, o.payload::text, o.status, o.priority, o.attempts, o.max_attempts, o.last_error,
  to_char(o.enqueued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  o.dedup_key, o.lease_owner, o.lease_token,
  to_char(o.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM {{s}}{{ops}} o
WHERE ($1::text = '' OR o.status = $1::text)
  AND ($5::text = '' OR o.type = $5::text)
  AND ($3::timestamptz IS NULL OR (o.enqueued_at, o.id) < ($3::timestamptz, $4::text))
ORDER BY o.enqueued_at DESC, o.id DESC
LIMIT $2::bigint
