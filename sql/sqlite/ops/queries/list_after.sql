-- A keyset page (op-queue.md §4.7): ?1 status ('' = all), ?2 limit, ?3/?4
-- the cursor's (enqueued_at, id) (?3 NULL: from the start). The contract is
-- the row comparison in the list order: strictly after the cursor. ?5 type ('' = all).
-- enqueued_at is canonical UTC text (§2.4), so text order is time order.
SELECT id, type, payload, status, priority, attempts, max_attempts, last_error, enqueued_at, started_at,
  finished_at, not_before, dedup_key, lease_owner, lease_token, heartbeat_at
FROM {{ops}}
WHERE (?1 = '' OR status = ?1)
  AND (?5 = '' OR type = ?5)
  AND (?3 IS NULL OR (enqueued_at, id) < (?3, ?4))
ORDER BY enqueued_at DESC, id DESC
LIMIT ?2
