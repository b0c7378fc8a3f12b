-- The outbox's recorded versions for this table (ledger in its schema).
-- $1 target "schema.table".
SELECT version FROM {{ledger}} WHERE component = 'outbox' AND target = $1
