-- Is an op of the types $1 (text[]; empty = any) ready now? The same
-- predicate as dequeue.sql, read only.
SELECT EXISTS (
  SELECT 1 FROM {{s}}{{ops}}
  WHERE status = 'pending'
    AND (not_before IS NULL OR not_before <= now())
    AND (cardinality($1::text[]) = 0 OR type = ANY ($1::text[])))
