-- Replay (§6.4), after every requested row was found terminal and locked:
-- T9 on all of them and ALL audit rows in one statement under one replay id.
-- Positions are kept. $1 ids, $2 replay id, $3 qualified outbox table,
-- $4 requested_by, $5 reason, $6 available_at µs or NULL (now).
WITH clock AS MATERIALIZED (
  SELECT clock_timestamp() AS now
), replayed AS (
  UPDATE {{t}} q
  SET state = 'pending', claim_count = 0, failure_count = 0,
      available_at = COALESCE(TS[$6::bigint], clock.now),
      lease_owner = NULL, lease_token = NULL, leased_until = NULL, delivered_at = NULL, dead_lettered_at = NULL,
      last_error_code = NULL, last_error = NULL, updated_at = clock.now
  FROM clock, (SELECT id, state AS previous FROM {{t}} WHERE id = ANY($1::text[])) p
  WHERE q.id = p.id AND q.state IN ('delivered', 'dead')
  RETURNING q.id, p.previous, q.available_at
), audit AS (
  INSERT INTO {{a}} (replay_id, outbox_table, message_id, previous_state, requested_by, reason, requested_at,
                     available_at)
  SELECT $2::uuid, $3, r.id, r.previous, $4, $5, clock.now, r.available_at FROM replayed r, clock
)
SELECT id, previous FROM replayed
