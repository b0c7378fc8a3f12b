-- The outbox's recorded versions for this table. ?1 target "main.table".
SELECT version FROM spool_schema_migrations WHERE component = 'outbox' AND target = ?1
