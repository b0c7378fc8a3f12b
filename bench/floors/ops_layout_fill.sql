-- The backlog of floor_ops_layout: :backlog pending ops in the op queue's own
-- table (as `spool migrate` makes it, with the indexes op-queue.md §2.1
-- requires), ids of the library's form counting up, a JSON payload of about
-- :pad bytes, enqueued a microsecond apart. psql variables: backlog, pad.
TRUNCATE ops_queue;
INSERT INTO ops_queue (id, type, payload, enqueued_at)
SELECT '00000000-0000-7000-8000-' || lpad(to_hex(n), 12, '0'), 'bench',
       jsonb_build_object('pad', repeat('x', greatest(:pad - 12, 0))),
       now() - interval '1 hour' + n * interval '1 microsecond'
FROM generate_series(1, :backlog) n;
ANALYZE ops_queue;
