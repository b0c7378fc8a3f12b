-- Enqueue a batch in one statement (op-queue.md §4.3, T1) over parallel
-- arrays: $1 ids, $2 types, $3 payloads (JSON object text), $4 priorities,
-- $5 max_attempts, $6 not_before (NULL: none), $7 delays in µs (NULL: none),
-- $8 dedup keys (NULL: none); $9 notify, $10 the channel.
-- Item n gets enqueued_at = now() + (n − 1) µs, so a batch drains first-in
-- first-out at equal priority; a delay is added to the database's now().
-- No conflict target: an item whose key a pending op holds (also an earlier
-- item of this batch: rows are inserted in input order) is skipped, and so is
-- an item whose id is already taken (a retried or resumed batch). The caller
-- tells the two apart by looking up the skipped ids (existing_ids.sql).
-- The marker before ON CONFLICT is empty, or "--" for a batch of new ids
-- without dedup keys in a transaction of its own (store_postgres_insert.cpp):
-- without ON CONFLICT, whose speculative insertion costs each row a second
-- probe of the unique indexes and a confirmation record in the WAL (issue
-- 13). There a taken id fails the whole statement (unique_violation), nothing
-- is written, and the caller runs the statement with ON CONFLICT.
-- The NOTIFY (one per distinct type made ready now) is part of the same
-- statement, so it is sent only if the insert commits.
WITH ins AS (
  INSERT INTO {{s}}{{ops}} AS o
    (id, type, payload, status, priority, attempts, max_attempts, enqueued_at, not_before, dedup_key)
  SELECT r.id, r.type, r.payload::jsonb, 'pending', r.priority, 0, r.max_attempts,
         now() + (r.n - 1) * interval '1 microsecond',
         COALESCE(r.not_before, now() + r.delay_us * interval '1 microsecond'),
         r.dedup_key
  FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::timestamptz[], $7::bigint[], $8::text[])
       WITH ORDINALITY AS r(id, type, payload, priority, max_attempts, not_before, delay_us, dedup_key, n)
  ORDER BY r.n
  {{fresh}} ON CONFLICT DO NOTHING
  RETURNING o.id, o.type, o.not_before
), woken AS (
  SELECT pg_notify($10::text, d.type)
  FROM (SELECT DISTINCT type FROM ins WHERE not_before IS NULL OR not_before <= now()) d
  WHERE $9::boolean
)
SELECT id FROM ins WHERE (SELECT count(*) FROM woken) >= 0
