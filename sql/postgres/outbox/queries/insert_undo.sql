-- Writer, error outcome only: removes the rows this batch just inserted in
-- the caller's transaction (and only those: same transaction id), so the
-- batch leaves nothing and the transaction stays usable.
DELETE FROM {{t}} WHERE id = ANY($1::text[]) AND xact_id = pg_current_xact_id()
