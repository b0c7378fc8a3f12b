-- floor_ops_insert_layout starts from an empty ops_queue (as `spool migrate`
-- makes it) and a sequence for its ids. psql variables: backlog, pad (unused).
SET client_min_messages = warning;
TRUNCATE ops_queue;
DROP SEQUENCE IF EXISTS floor_ids;
CREATE SEQUENCE floor_ids;
