-- A page of ops and the total matching the filter (op-queue.md §4.7): $1
-- status ('' = all, else exact), $2 limit, $3 offset. One statement, so the
-- total and the page come from one snapshot. The order is the contract:
-- enqueued_at DESC, then id DESC, deterministic, so offset pages neither skip
-- nor repeat rows while the table is unchanged. The two trailing sort
-- columns carry that order out of the lateral subquery.
WITH total AS (
  SELECT count(*) AS n FROM {{s}}{{ops}} WHERE ($1::text = '' OR status = $1::text)
)
SELECT total.n, p.* FROM total LEFT JOIN LATERAL (
  SELECT o.id, o.type, o.payload::text, o.status, o.priority, o.attempts, o.max_attempts, o.last_error,
  to_char(o.enqueued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  o.dedup_key, o.lease_owner, o.lease_token,
  to_char(o.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  o.enqueued_at AS sort_at, o.id AS sort_id
  FROM {{s}}{{ops}} o
  WHERE ($1::text = '' OR o.status = $1::text)
  ORDER BY o.enqueued_at DESC, o.id DESC
  LIMIT $2::bigint OFFSET $3::bigint
) p ON true
ORDER BY p.sort_at DESC, p.sort_id DESC
