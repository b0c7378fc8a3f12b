-- The indexes of the op table ($1 schema, $2 table), for the schema check.
SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = $2
