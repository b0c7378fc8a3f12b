-- Writer (outbox.md §5) with notify on: the insert (fragments/insert_rows.sql)
-- and its pg_notify in one statement, so one round trip instead of two. The
-- notification goes out only if the caller commits, and only when the
-- statement inserted a row: woke reads one row of ins, and the count makes
-- the outer query read woke. $10 channel, $11 the qualified table name.
WITH ins AS (
{{insert_rows}}
), woke AS (
  SELECT pg_notify($10, $11) FROM (SELECT 1 FROM ins LIMIT 1) one
)
SELECT ins.* FROM ins CROSS JOIN (SELECT count(*) FROM woke) w
