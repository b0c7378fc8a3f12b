-- Enqueue a batch whose ids are new and which holds no dedup key, as
-- enqueue.sql (its parameters and its answer) but without ON CONFLICT: a
-- speculative insertion costs each row a second probe of the unique indexes
-- and a confirmation record in the WAL (issue 13, docs/BENCHMARKS.md). Used
-- in an implicit transaction of its own only: an id already taken fails the
-- whole statement (unique_violation), nothing is written, and the caller runs
-- enqueue.sql, which skips it.
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
  RETURNING o.id, o.type, o.not_before
), woken AS (
  SELECT pg_notify($10::text, d.type)
  FROM (SELECT DISTINCT type FROM ins WHERE not_before IS NULL OR not_before <= now()) d
  WHERE $9::boolean
)
SELECT id FROM ins WHERE (SELECT count(*) FROM woken) >= 0
