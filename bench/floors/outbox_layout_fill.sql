-- The backlog of floor_outbox_layout: :backlog pending envelopes in the
-- outbox's own table (as `spool migrate` makes it, with the indexes and CHECK
-- constraints of outbox.md §3), ids of the library's form counting up,
-- :pad payload bytes, due and created a microsecond apart. psql variables:
-- backlog, pad.
TRUNCATE outbox_messages;
INSERT INTO outbox_messages (id, topic, payload, payload_version, available_at, created_at)
SELECT '00000000-0000-7000-8000-' || lpad(to_hex(n), 12, '0'), 'bench', convert_to(repeat('x', :pad), 'UTF8'), 1,
       now() - interval '1 hour' + n * interval '1 microsecond', now() - interval '1 hour' + n * interval '1 microsecond'
FROM generate_series(1, :backlog) n;
ANALYZE outbox_messages;
