-- The newest `ops` version recorded for this table (?1 = main.<table>), or NULL.
SELECT max(version) FROM spool_schema_migrations WHERE component = 'ops' AND target = ?1
