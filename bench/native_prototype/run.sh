#!/usr/bin/env bash
# native_prototype/run.sh — was a native message-queue layout worth building? (issue 13)
#
# Runs, with pgbench on a durable PostgreSQL (fsync, synchronous_commit and
# full_page_writes on), the same cycles through three tables, interleaved in
# rounds, and prints one JSON line per figure:
#   legacy  queue_messages as `spool migrate` makes it, with Spool's claim and
#           ack_batch SQL (legacy_cycle.sql);
#   native  the candidate native layout (setup.sql: int queue id, bigint order
#           key, fillfactor 80, a claim that changes no indexed column so that
#           it can be a HOT update; native_cycle.sql);
#   floor   the at-least-once floor of bench/run.sh (floor_alo.sql).
# Workloads: the drain of BACKLOG messages at batch 100 with 1, 4 and 16
# clients, the same drain at 4 clients while another session holds a
# REPEATABLE READ snapshot ("held"), and publish of 100 rows per transaction
# (legacy, native, a uuid-keyed two-index row, and the one-index insert floor).
# Then, with pgbench -M simple for both (the rotated cycle names its table),
# the legacy drain beside a rotated one at 4 clients, clean and held:
#   rotated the backlog spread over ten generation tables shaped like
#           queue_messages, claimed oldest first with the legacy SQL, each
#           truncated once drained (rotated_cycle.sql; the rotator below).
#
#   bench/native_prototype/run.sh            start a durable server of its own
#   PG_URI=postgresql://… run.sh             use a running server
# Environment: SPOOL (the spool binary for `spool migrate`; default
# build-bench/spool, then build/spool), ROUNDS [3], BACKLOG [100000], PAD [300],
# CLIENTS ["1 4 16"], PUBLISH_SECONDS [5].
set -Eeuo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=${ROUNDS:-3} BACKLOG=${BACKLOG:-100000} PAD=${PAD:-300} CLIENTS=${CLIENTS:-"1 4 16"}
PUBLISH_SECONDS=${PUBLISH_SECONDS:-5}
SPOOL=${SPOOL:-$ROOT/build-bench/spool}
[ -x "$SPOOL" ] || SPOOL=$ROOT/build/spool
[ -x "$SPOOL" ] || { echo "run.sh: no spool binary (set SPOOL)" >&2; exit 1; }
STOP=$(mktemp -u /tmp/spool-native-proto-stop.XXXXXX)
SIMPLE=$(mktemp /tmp/spool-native-proto-simple.XXXXXX.sql)
DIR=
# On any exit: stop a rotator still polling (touching STOP ends its loop),
# remove the temporary files, and stop the server this script started.
cleanup() {
  touch "$STOP"
  exec 7>&- # a held session's psql ends when its input closes
  wait
  rm -f "$STOP" "$SIMPLE"
  [ -z "$DIR" ] || "$ROOT/tests/support/pg_server.sh" stop "$DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
if [ -z "${PG_URI:-}" ]; then
  DIR=$(mktemp -d /tmp/spool-native-proto.XXXXXX)
  SPOOL_PG_DURABLE=1 "$ROOT/tests/support/pg_server.sh" start "$DIR" >/dev/null
  PG_URI=$(cat "$DIR/uri")
fi
psql_q() { psql -X -q -v ON_ERROR_STOP=1 -d "$PG_URI" "$@"; }
"$SPOOL" migrate --db "$PG_URI" >/dev/null
psql_q -f "$HERE/setup.sql" 2>/dev/null
settings=$(psql -X -Atq -d "$PG_URI" -c "SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings WHERE name IN ('fsync','synchronous_commit','full_page_writes','shared_buffers','server_version')")
echo "{\"kind\":\"params\",\"rounds\":$ROUNDS,\"backlog\":$BACKLOG,\"pad\":$PAD,\"clients\":\"$CLIENTS\",\"batch\":100,\"publish_seconds\":$PUBLISH_SECONDS,\"nproc\":$(nproc),\"settings\":\"$settings\"}"

# load KIND: BACKLOG visible messages in KIND's table, vacuumed and analysed.
load() {
  local now="floor(extract(epoch FROM now()))::bigint - 1"
  case $1 in
    floor) psql_q -c 'TRUNCATE floor_alo' -c "INSERT INTO floor_alo (payload) SELECT repeat('x', $PAD) FROM generate_series(1, $BACKLOG)" -c 'VACUUM ANALYZE floor_alo' ;;
    legacy) psql_q -c 'TRUNCATE queue_messages' -c "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count) SELECT '0193a' || lpad(to_hex(i), 31, '0'), 'bench', NULL, NULL, $now, repeat('x', $PAD), $now, 0 FROM generate_series(1, $BACKLOG) i" -c 'VACUUM ANALYZE queue_messages' ;;
    native) psql_q -c 'TRUNCATE mqn' -c "INSERT INTO mqn (queue_id, seq, id, visible_at, created_at, payload) SELECT 1, i, '0193a' || lpad(to_hex(i), 31, '0'), $now, $now, repeat('x', $PAD) FROM generate_series(1, $BACKLOG) i" -c 'VACUUM ANALYZE mqn' ;;
  esac
  psql_q -c CHECKPOINT
}

# drain KIND CLIENTS [held]: msgs/s of the drain of the whole backlog.
drain() {
  local kind=$1 clients=$2 held=${3:-} script
  case $kind in floor) script=floor_alo.sql ;; legacy) script=legacy_cycle.sql ;; native) script=native_cycle.sql ;; esac
  load "$kind"
  if [ -n "$held" ]; then
    exec 7> >(psql -X -q -d "$PG_URI" >/dev/null 2>&1)
    echo "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM floor_q;" >&7
    sleep 0.5
  fi
  local tps
  tps=$(pgbench -n -M prepared -c "$clients" -j "$clients" -t $((BACKLOG / (100 * clients))) -f "$HERE/$script" "$PG_URI" 2>/dev/null |
    sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1)
  if [ -n "$held" ]; then
    echo "COMMIT;" >&7
    exec 7>&-
  fi
  awk -v t="$tps" -v k="$kind" -v c="$clients" -v h="${held:-clean}" -v r="$round" \
    'BEGIN { printf "{\"kind\":\"drain\",\"round\":%d,\"layout\":\"%s\",\"clients\":%d,\"snapshot\":\"%s\",\"msgs_per_s\":%.0f}\n", r, k, c, h, t * 100 }'
}

# publish SCRIPT: msgs/s of one client inserting 100 rows per transaction.
publish() {
  psql_q -c 'TRUNCATE floor_q, queue_messages, mqn, mqu' -c CHECKPOINT
  local tps
  tps=$(pgbench -n -M prepared -c 1 -T "$PUBLISH_SECONDS" -D pad="$PAD" -f "$HERE/publish_$1.sql" "$PG_URI" 2>/dev/null |
    sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1)
  awk -v t="$tps" -v k="$1" -v r="$round" \
    'BEGIN { printf "{\"kind\":\"publish\",\"round\":%d,\"layout\":\"%s\",\"batch\":100,\"msgs_per_s\":%.0f}\n", r, k, t * 100 }'
}

# rotator: truncates each generation once the head has passed it and it holds
# no row (a real layout would also move in-flight and delayed rows forward).
rotator() {
  local g e
  for g in 0 1 2 3 4 5 6 7 8; do
    while [ ! -f "$STOP" ]; do
      e=$(psql -X -Atq -d "$PG_URI" -c "SELECT (SELECT gen FROM rotated_head) > $g AND NOT EXISTS (SELECT 1 FROM rotated_$g)")
      if [ "$e" = t ]; then
        psql -X -q -d "$PG_URI" -c "SET lock_timeout = '2s'; TRUNCATE rotated_$g" 2>/dev/null && break
      fi
      sleep 0.05
    done
  done
}

# drain_simple KIND [held]: KIND legacy or rotated, 4 clients, pgbench -M
# simple; msgs/s from the messages gone over the wall time (a rotated
# client's claim can come back empty while it waits for the head to move).
drain_simple() {
  local kind=$1 held=${2:-} script now="floor(extract(epoch FROM now()))::bigint - 1" per=$((BACKLOG / 10))
  if [ "$kind" = rotated ]; then
    for g in 0 1 2 3 4 5 6 7 8 9; do
      psql_q -c "TRUNCATE rotated_$g" -c "INSERT INTO rotated_$g (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count) SELECT '0193a' || lpad(to_hex(i), 31, '0'), 'bench', NULL, NULL, $now, repeat('x', $PAD), $now, 0 FROM generate_series($g * $per + 1, ($g + 1) * $per) i" -c "VACUUM ANALYZE rotated_$g"
    done
    psql_q -c 'DELETE FROM rotated_head' -c 'INSERT INTO rotated_head VALUES (0)' -c CHECKPOINT
    script=$HERE/rotated_cycle.sql
  else
    load legacy
    script=$SIMPLE
  fi
  if [ -n "$held" ]; then
    exec 7> >(psql -X -q -d "$PG_URI" >/dev/null 2>&1)
    echo "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM floor_q;" >&7
    sleep 0.5
  fi
  rm -f "$STOP"
  local rp=
  if [ "$kind" = rotated ]; then rotator & rp=$!; fi
  local t0 t1 left
  t0=$(date +%s.%N)
  pgbench -n -M simple -c 4 -j 4 -t $((BACKLOG / 400)) -f "$script" "$PG_URI" >/dev/null 2>&1
  t1=$(date +%s.%N)
  touch "$STOP"
  [ -n "$rp" ] && wait "$rp"
  if [ -n "$held" ]; then
    echo "COMMIT;" >&7
    exec 7>&-
  fi
  if [ "$kind" = rotated ]; then
    left=$(psql -X -Atq -d "$PG_URI" -c "SELECT 0 $(for g in 0 1 2 3 4 5 6 7 8 9; do echo -n "+ (SELECT count(*) FROM rotated_$g)"; done)")
  else
    left=$(psql -X -Atq -d "$PG_URI" -c "SELECT count(*) FROM queue_messages")
  fi
  awk -v a="$t0" -v b="$t1" -v l="$left" -v n="$BACKLOG" -v k="$kind" -v h="${held:-clean}" -v r="$round" \
    'BEGIN { printf "{\"kind\":\"drain_simple\",\"round\":%d,\"layout\":\"%s\",\"clients\":4,\"snapshot\":\"%s\",\"messages\":%d,\"msgs_per_s\":%.0f}\n", r, k, h, n - l, (n - l) / (b - a) }'
}

# legacy_cycle.sql for pgbench -M simple, beside rotated_cycle.sql (which
# needs simple mode to name its table): arrays quoted, an empty claim '{}'.
sed "s/unnest(:ids::text\[\], :rs::text\[\])/unnest(':ids'::text[], ':rs'::text[])/;
     s/SELECT array_agg(id) AS ids, array_agg(receipt_handle) AS rs FROM claimed/SELECT COALESCE(array_agg(id), '{}') AS ids, COALESCE(array_agg(receipt_handle), '{}') AS rs FROM claimed/" \
  "$HERE/legacy_cycle.sql" >"$SIMPLE"
for round in $(seq 1 "$ROUNDS"); do
  for c in $CLIENTS; do
    for kind in floor legacy native; do drain $kind "$c"; done
  done
  for kind in floor legacy native; do drain $kind 4 held; done
  for kind in floor legacy native uuid; do publish $kind; done
  for kind in legacy rotated; do drain_simple $kind; drain_simple $kind held; done
done
psql_q -c "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname IN ('queue_messages', 'mqn', 'floor_alo')" -At |
  awk -F'|' '{ printf "{\"kind\":\"hot\",\"table\":\"%s\",\"updates\":%d,\"hot_updates\":%d}\n", $1, $2, $3 }'
