-- floor_outbox_insert_layout starts from an empty outbox_messages (as `spool migrate`
-- makes it) and a sequence for its ids. psql variables: backlog, pad (unused).
SET client_min_messages = warning;
TRUNCATE outbox_messages;
DROP SEQUENCE IF EXISTS floor_ids;
CREATE SEQUENCE floor_ids;
