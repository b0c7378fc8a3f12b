-- The columns of the op table ($1 schema, $2 table), for the schema check at
-- construction (op-queue.md §2.3).
SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
