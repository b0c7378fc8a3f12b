-- Writer, error outcome only: removes the rows this batch just inserted
-- (JSON array ?1) in the caller's transaction, so the batch leaves nothing.
DELETE FROM {{t}} WHERE id IN (SELECT value FROM json_each(?1))
