-- The newest `ops` version recorded for this table ($1 = schema.table), or
-- NULL when the ledger has none. Run only when the ledger table exists.
SELECT max(version) FROM {{s}}spool_schema_migrations WHERE component = 'ops' AND target = $1
