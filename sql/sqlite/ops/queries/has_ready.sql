-- Is an op of the types ?1 (a JSON array of strings; [] = any) ready now?
-- Read only: an idle poll never takes the write lock (op-queue.md §7.2).
-- Same predicate as claim.sql; not_before passes through datetime() (§2.4).
SELECT EXISTS (
  SELECT 1 FROM {{ops}}
  WHERE status = 'pending'
    AND (not_before IS NULL OR datetime(not_before) <= datetime('now'))
    AND (?1 = '[]' OR type IN (SELECT value FROM json_each(?1))))
