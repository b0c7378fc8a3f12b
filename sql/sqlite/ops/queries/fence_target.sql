-- The row an outcome call (ack, fail, release, heartbeat; op-queue.md §4.5)
-- meets, read inside the call's write transaction, so a rejection reports the
-- row as it was when the call was rejected.
SELECT status, lease_token FROM {{ops}} WHERE id = ?1
