-- How far the transaction horizon holds ordered claims back (§6.1's horizon
-- rule): a keyed row is claimable only once every transaction that could
-- still commit before it has ended, i.e. its xact_id is below
-- pg_snapshot_xmin. Reports the horizon and the next xid, how many due
-- pending keyed rows wait at or above it (counted up to 10,001: the partial
-- order index bounds the walk to live keyed rows), and the oldest open
-- transaction that holds it: a backend with an xid (other roles' sessions
-- are visible only to members of pg_read_all_stats) or a prepared
-- transaction, whose age is exact.
WITH clock AS MATERIALIZED (
  SELECT clock_timestamp() AS now, pg_current_snapshot() AS snap
), holders AS (
  SELECT a.pid, a.xact_start AS since FROM pg_stat_activity a
  WHERE a.backend_xid IS NOT NULL AND a.pid <> pg_backend_pid() AND a.xact_start IS NOT NULL
  UNION ALL
  SELECT NULL, p.prepared FROM pg_prepared_xacts p
), oldest AS (
  SELECT pid, since FROM holders ORDER BY since LIMIT 1
)
SELECT pg_snapshot_xmin(clock.snap)::text, pg_snapshot_xmax(clock.snap)::text,
       (SELECT count(*) FROM (
          SELECT 1 FROM {{t}} m
          WHERE m.state = 'pending' AND m.ordering_key <> '' AND m.available_at <= clock.now
            AND m.xact_id >= pg_snapshot_xmin(clock.snap)
          LIMIT 10001) held),
       (SELECT pid FROM oldest),
       (SELECT US[clock.now] - US[since] FROM oldest)
FROM clock
