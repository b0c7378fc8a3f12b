-- `spool ops repair-times` (op-queue.md §2.4): the timestamp normalisation
-- of migration ops/3, run again, for rows a pre-fix filex writer scheduled
-- after the migration. A script, not one statement: the driver runs it in
-- BEGIN IMMEDIATE, reads how many values it rewrote from
-- temp.spool_ops_times, then drops the temp tables. A value in no known form
-- trips the CHECK constraint spool_malformed_row and nothing changes.
DROP TABLE IF EXISTS temp.spool_ops_times;
CREATE TEMP TABLE spool_ops_times (rid INTEGER, id TEXT, col TEXT, v, dt TEXT, rest TEXT, zone TEXT, frac TEXT, tz TEXT, c TEXT);
INSERT INTO temp.spool_ops_times (rid, id, col, v)
  SELECT rowid, id, 'enqueued_at', enqueued_at FROM {{ops}} WHERE enqueued_at IS NOT NULL
  UNION ALL SELECT rowid, id, 'started_at', started_at FROM {{ops}} WHERE started_at IS NOT NULL
  UNION ALL SELECT rowid, id, 'finished_at', finished_at FROM {{ops}} WHERE finished_at IS NOT NULL
  UNION ALL SELECT rowid, id, 'not_before', not_before FROM {{ops}} WHERE not_before IS NOT NULL
  UNION ALL SELECT rowid, id, 'heartbeat_at', heartbeat_at FROM {{ops}} WHERE heartbeat_at IS NOT NULL;
-- Canonical values stay as they are.
DELETE FROM temp.spool_ops_times
  WHERE typeof(v) = 'text'
    AND v GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]'
    AND datetime(v) = v;
-- Date and time of day, then what follows them: an optional fraction and the zone.
UPDATE temp.spool_ops_times SET dt = substr(v, 1, 10) || ' ' || substr(v, 12, 8), rest = substr(v, 20)
  WHERE typeof(v) = 'text' AND length(v) >= 19 AND substr(v, 11, 1) IN ('T', 't', ' ')
    AND (substr(v, 1, 10) || ' ' || substr(v, 12, 8))
        GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]';
UPDATE temp.spool_ops_times
  SET zone = CASE WHEN substr(rest, 1, 1) = '.' THEN ltrim(substr(rest, 2), '0123456789') ELSE rest END
  WHERE dt IS NOT NULL;
UPDATE temp.spool_ops_times SET frac = substr(rest, 2, length(rest) - 1 - length(zone))
  WHERE dt IS NOT NULL AND substr(rest, 1, 1) = '.';
UPDATE temp.spool_ops_times SET tz = CASE
    WHEN zone = '' THEN ''
    WHEN zone IN ('Z', 'z') THEN '+00:00'
    WHEN zone GLOB '[+-][0-9][0-9]:[0-9][0-9]' THEN zone
    WHEN zone GLOB ' [+-][0-9][0-9][0-9][0-9]' OR zone GLOB ' [+-][0-9][0-9][0-9][0-9] *'
      THEN substr(zone, 2, 3) || ':' || substr(zone, 5, 2)
  END
  WHERE dt IS NOT NULL AND (frac IS NULL OR frac <> '');
UPDATE temp.spool_ops_times
  SET c = datetime(dt || tz, CASE WHEN col = 'not_before' AND frac GLOB '*[1-9]*' THEN '+1 second' ELSE '+0 seconds' END)
  WHERE tz IS NOT NULL;
DROP TABLE IF EXISTS temp.spool_ops_time_check;
CREATE TEMP TABLE spool_ops_time_check (ok INTEGER CONSTRAINT spool_malformed_row CHECK (ok));
INSERT INTO temp.spool_ops_time_check SELECT 0 FROM temp.spool_ops_times WHERE c IS NULL LIMIT 1;
UPDATE {{ops}} SET enqueued_at = (SELECT t.c FROM temp.spool_ops_times t WHERE t.rid = {{ops}}.rowid AND t.col = 'enqueued_at')
  WHERE rowid IN (SELECT rid FROM temp.spool_ops_times WHERE col = 'enqueued_at');
UPDATE {{ops}} SET started_at = (SELECT t.c FROM temp.spool_ops_times t WHERE t.rid = {{ops}}.rowid AND t.col = 'started_at')
  WHERE rowid IN (SELECT rid FROM temp.spool_ops_times WHERE col = 'started_at');
UPDATE {{ops}} SET finished_at = (SELECT t.c FROM temp.spool_ops_times t WHERE t.rid = {{ops}}.rowid AND t.col = 'finished_at')
  WHERE rowid IN (SELECT rid FROM temp.spool_ops_times WHERE col = 'finished_at');
UPDATE {{ops}} SET not_before = (SELECT t.c FROM temp.spool_ops_times t WHERE t.rid = {{ops}}.rowid AND t.col = 'not_before')
  WHERE rowid IN (SELECT rid FROM temp.spool_ops_times WHERE col = 'not_before');
UPDATE {{ops}} SET heartbeat_at = (SELECT t.c FROM temp.spool_ops_times t WHERE t.rid = {{ops}}.rowid AND t.col = 'heartbeat_at')
  WHERE rowid IN (SELECT rid FROM temp.spool_ops_times WHERE col = 'heartbeat_at');
