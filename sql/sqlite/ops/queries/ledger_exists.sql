-- Does the migration ledger exist?
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'spool_schema_migrations'
