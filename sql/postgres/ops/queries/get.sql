-- One op by id (op-queue.md §4.6).
SELECT o.id, o.type, o.payload::text, o.status, o.priority, o.attempts, o.max_attempts, o.last_error,
  to_char(o.enqueued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  to_char(o.not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
  o.dedup_key, o.lease_owner, o.lease_token,
  to_char(o.heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM {{s}}{{ops}} o WHERE o.id = $1::text
