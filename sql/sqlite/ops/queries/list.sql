-- A page of ops and the total matching the filter (op-queue.md §4.7): ?1
-- status ('' = all, else exact), ?2 limit, ?3 offset. One statement is one
-- read transaction, so the total and the page come from one snapshot. The
-- order is the contract: enqueued_at DESC, then id DESC (deterministic).
SELECT t.n, o.id, o.type, o.payload, o.status, o.priority, o.attempts, o.max_attempts, o.last_error, o.enqueued_at,
  o.started_at, o.finished_at, o.not_before, o.dedup_key, o.lease_owner, o.lease_token, o.heartbeat_at
FROM (SELECT count(*) AS n FROM {{ops}} WHERE (?1 = '' OR status = ?1)) t
LEFT JOIN (
  SELECT * FROM {{ops}}
  WHERE (?1 = '' OR status = ?1)
  ORDER BY enqueued_at DESC, id DESC
  LIMIT ?2 OFFSET ?3
) o ON 1
ORDER BY o.enqueued_at DESC, o.id DESC
