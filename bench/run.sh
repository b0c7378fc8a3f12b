#!/usr/bin/env bash
# bench/run.sh — the full Spool benchmark (docs/BENCHMARKS.md): the named
# workloads of `spool bench` for mq, ops and outbox on PostgreSQL and SQLite,
# next to what PostgreSQL itself does with the simplest possible queue table
# (the floor, pgbench on the same server in the same run), and every Spool
# figure as a ratio to its floor.
#
#   bench/run.sh [RESULTS.jsonl]
#
# Builds `spool` in build-bench (Release) unless SPOOL_CLI names a binary,
# starts a throwaway PostgreSQL (tests/support/pg_server.sh with
# SPOOL_PG_DURABLE=1: fsync, synchronous_commit and full_page_writes on,
# shared_buffers 256MB, as users run it; FAST=1 turns all three off for
# profiling, and the machine line of such a run says "durable":false), and
# writes every result as one JSON line to
# RESULTS (default bench/results/<UTC date>.jsonl) and to stdout; progress goes
# to stderr. The server is stopped on exit, also on failure or Ctrl-C.
# Nothing here asserts timings. Needs pgbench, psql and jq.
#
# Lines, told apart by their keys:
#   {"kind":"machine",…}          nproc, memory, CPU model, server settings;
#   {"engine","capability","workload",…}  a Spool result (W1, W2, W3, W4, backlog);
#   {"kind":"floor",…}            a pgbench floor result: floor_insert (publish),
#                                 floor_claim (one-commit: DELETE … SKIP LOCKED)
#                                 floor_alo (at-least-once: a visibility-timeout
#                                 claim UPDATE, then a DELETE by id, two commits)
#                                 and floor_kept (lease and keep: a claim UPDATE
#                                 taking a lease, then an UPDATE to done; the rows
#                                 stay, as the op queue's and the outbox's do),
#                                 and the layout floors of bench/floors/ (the
#                                 insert cycle on each capability's own table,
#                                 floor_<cap>_insert_layout, and the
#                                 lease-and-keep cycle on the op queue's and the
#                                 outbox's, floor_ops_layout / floor_outbox_layout,
#                                 with the indexes and constraints their specs
#                                 require);
#   {"kind":"ratio",…}            a Spool result over a floor of the same cycle
#                                 (drains: one line per floor, the same cycle's
#                                 first: floor_alo for mq, floor_kept for ops and
#                                 outbox, then the layout floor);
#   {"kind":"backlog_growth",…}   cost per message at the largest backlog over 1k;
#   {"kind":"held_vs_clean",…}    the held-snapshot drain over the clean one;
#   {"kind":"cli_runtime",…}      spool mq work / ops work / relay draining
#                                 CLI_BACKLOG rows with a no-op handler;
#   {"kind":"runtime_vs_loop",…}  a runtime (library or CLI) over the library
#                                 loop (W3) at the same width and claim size;
#   {"kind":"rss",…}              peak resident memory of spool mq work, ops work
#                                 and relay at concurrency 16 (RSS_BACKLOG, RSS_SECONDS).
#
# Environment (defaults in brackets): SPOOL_CLI [build-bench/spool],
# BACKLOG [100000] (W3, held and floor_claim), MAX_SECONDS [6] (cap of one
# timed Spool phase), BACKLOG_SIZES [1000,100000,1000000] (PostgreSQL),
# SQLITE_BACKLOG_SIZES [1000,100000], SQLITE_BACKLOG_CYCLES [300] (every SQLite
# commit is an fsync), CAPABILITIES [mq,ops,outbox],
# FLOOR_CLAIM1_MESSAGES [20000] (floor_claim batch 1 takes this many of the
# backlog), PAYLOAD_BYTES [256], QUICK (set: smoke sizes everywhere),
# FAST (set: a non-durable server, for profiling only), FLOORS_ONLY (set:
# append the floors and the ratios to an existing RESULTS file, skipping the
# Spool workloads; for a run whose floors were interrupted).
set -Eeuo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/bench/results/$(date -u +%F).jsonl}
BACKLOG=${BACKLOG:-100000}
MAX_SECONDS=${MAX_SECONDS:-6}
SQLITE_BACKLOG_CYCLES=${SQLITE_BACKLOG_CYCLES:-300}
BACKLOG_SIZES=${BACKLOG_SIZES:-1000,100000,1000000}
SQLITE_BACKLOG_SIZES=${SQLITE_BACKLOG_SIZES:-1000,100000}
CAPABILITIES=${CAPABILITIES:-mq,ops,outbox}
FLOOR_CLAIM1_MESSAGES=${FLOOR_CLAIM1_MESSAGES:-20000}
PAYLOAD_BYTES=${PAYLOAD_BYTES:-256}
FLOOR_INSERT1_MESSAGES=10000
FLOOR_INSERT100_MESSAGES=100000
PG_SERVER=$ROOT/tests/support/pg_server.sh
QUICK_ARGS=()
if [[ -n ${QUICK:-} ]]; then
  QUICK_ARGS=(--quick)
  BACKLOG=300 BACKLOG_SIZES=100,1000 SQLITE_BACKLOG_SIZES=100,1000 FLOOR_CLAIM1_MESSAGES=300
  FLOOR_INSERT1_MESSAGES=200 FLOOR_INSERT100_MESSAGES=1000
fi

say() { echo "run.sh: $*" >&2; }
if [[ -n ${FAST:-} ]]; then
  say "FAST: fsync, synchronous_commit and full_page_writes OFF: figures for profiling, not for users"
  DURABLE=false
else
  export SPOOL_PG_DURABLE=1
  DURABLE=true
fi

if [[ -z ${SPOOL_CLI:-} ]]; then
  SPOOL_CLI=$ROOT/build-bench/spool
  say "building spool (Release) in build-bench"
  [[ -f $ROOT/build-bench/CMakeCache.txt ]] ||
    cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=Release -DSPOOL_BUILD_TESTS=OFF \
      -DSPOOL_BUILD_EXAMPLES=OFF >&2
  cmake --build "$ROOT/build-bench" --target spool_cli -j2 >&2
fi
[[ -x $SPOOL_CLI ]] || { say "$SPOOL_CLI is not an executable"; exit 1; }
command -v jq >/dev/null || { say "jq not found (scripts/install-deps.sh installs it)"; exit 1; }
PG_BIN=$(pg_config --bindir 2>/dev/null || true)
[[ -n $PG_BIN && -x $PG_BIN/pgbench ]] || PG_BIN=/usr/lib/postgresql/15/bin
[[ -x $PG_BIN/pgbench && -x $PG_BIN/psql ]] || { say "pgbench/psql not found in $PG_BIN"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/spool-bench.XXXXXX")
HELD_PID=""
cleanup() {
  [[ -n $HELD_PID ]] && kill "$HELD_PID" 2>/dev/null
  "$PG_SERVER" stop "$WORK/pg" >/dev/null 2>&1 || say "could not stop the server in $WORK/pg"
  rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # run the EXIT trap on Ctrl-C too

mkdir -p "$(dirname -- "$OUT")"
[[ -n ${FLOORS_ONLY:-} ]] || : >"$OUT"
emit() { tee -a "$OUT"; }
START=$(date +%s)

"$PG_SERVER" start "$WORK/pg" >&2
ADMIN_URI=$(<"$WORK/pg/uri")
URI=${ADMIN_URI%/*}/bench
psql_bench() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$URI" "$@"; }
"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$ADMIN_URI" -c 'CREATE DATABASE bench'

# ---- the machine and the server ----
SETTINGS=$(psql_bench -A -t -c "SELECT json_object_agg(name, setting || COALESCE(unit, '')) FROM pg_settings
  WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections',
                 'wal_level', 'checkpoint_timeout', 'max_wal_size', 'work_mem', 'autovacuum', 'jit', 'server_version')")
jq -c -n --arg cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" \
  --argjson nproc "$(nproc)" --argjson mem "$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)" \
  --arg kernel "$(uname -r)" --arg date "$(date -u +%FT%TZ)" --argjson pg "$SETTINGS" \
  --arg sqlite "$(sqlite3 --version 2>/dev/null | cut -d' ' -f1)" --arg commit "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --argjson durable "$DURABLE" \
  '{kind:"machine", date:$date, commit:$commit, durable:$durable, nproc:$nproc, mem_kb:$mem, cpu:$cpu, kernel:$kernel,
    postgres:$pg, sqlite:$sqlite, sqlite_synchronous:"full"}' | emit

if [[ -z ${FLOORS_ONLY:-} ]]; then
# ---- Spool ----
for cap in ${CAPABILITIES//,/ }; do
  say "spool bench: $cap on PostgreSQL"
  "$SPOOL_CLI" bench --db "$URI" --json --capability "$cap" --backlog "$BACKLOG" --backlog-sizes "$BACKLOG_SIZES" \
    --max-seconds "$MAX_SECONDS" --payload-bytes "$PAYLOAD_BYTES" "${QUICK_ARGS[@]}" | emit
done
mkdir -p "$WORK/sqlite"
for cap in ${CAPABILITIES//,/ }; do
  say "spool bench: $cap on SQLite"
  "$SPOOL_CLI" bench --db "sqlite:$WORK/sqlite/$cap.db" --json --capability "$cap" --backlog "$BACKLOG" \
    --workload W1,W2,W3,W4,backlog,runtime --backlog-sizes "$SQLITE_BACKLOG_SIZES" --backlog-cycles "$SQLITE_BACKLOG_CYCLES" \
    --max-seconds "$MAX_SECONDS" \
    --payload-bytes "$PAYLOAD_BYTES" "${QUICK_ARGS[@]}" | emit
done

# SQLite with synchronous=normal (WAL: no fsync per commit, durable up to the
# last checkpoint after a power loss, never corrupt): the publish-batch and
# drain rows again, for the SQLite targets of docs/BENCHMARKS.md.
for cap in ${CAPABILITIES//,/ }; do
  say "spool bench: $cap on SQLite, synchronous=normal"
  "$SPOOL_CLI" bench --db "sqlite:$WORK/sqlite/normal-$cap.db" --json --capability "$cap" --backlog "$BACKLOG" \
    --workload W2,W3 --workers 1,4 --consumer-batch 100 --sqlite-synchronous normal --max-seconds "$MAX_SECONDS" \
    --payload-bytes "$PAYLOAD_BYTES" "${QUICK_ARGS[@]}" | emit
done

# ---- resident memory of the worker processes at 16 workers ----
# Each process (spool mq work, ops work, relay; concurrency 16) works through a
# backlog of RSS_BACKLOG rows with a no-op handler (exec true, file:/dev/null)
# while its VmRSS is sampled every 0.1 s for RSS_SECONDS; then SIGTERM.
RSS_BACKLOG=${RSS_BACKLOG:-5000}
RSS_SECONDS=${RSS_SECONDS:-4}
[[ -n ${QUICK:-} ]] && RSS_BACKLOG=200 RSS_SECONDS=1
# rss NAME CMD…: one {"kind":"rss"} line.
rss() {
  local name=$1 pid peak=0 kb i
  shift
  "$@" >/dev/null 2>"$WORK/rss.log" &
  pid=$!
  for i in $(seq 1 $((RSS_SECONDS * 10))); do
    kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    ((${kb:-0} > peak)) && peak=$kb
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  jq -c -n --arg p "$name" --argjson kb "$peak" --argjson backlog "$RSS_BACKLOG" \
    '{kind:"rss", engine:"postgres", process:$p, concurrency:16, backlog:$backlog, max_rss_kb:$kb,
      max_rss_mb:(($kb / 1024 * 10 | round) / 10)}' | emit
}
say "resident memory of spool mq work, ops work and relay at concurrency 16"
seq "$RSS_BACKLOG" | sed 's|.*|{"poolCode":"bench","mediationType":"HTTP","mediationTarget":"https://bench.example.com/hook"}|' |
  "$SPOOL_CLI" mq publish --db "$URI" --queue spool_rss >/dev/null
rss "mq work" "$SPOOL_CLI" mq work --db "$URI" --queue spool_rss --exec true --concurrency 16 --notify
psql_bench -c "INSERT INTO ops_queue (id, type, payload) SELECT 'rss' || g, 'spool_rss', '{}' FROM generate_series(1, $RSS_BACKLOG) g"
rss "ops work" "$SPOOL_CLI" ops work --db "$URI" --type spool_rss --exec true --concurrency 16 --notify
psql_bench -c "INSERT INTO outbox_messages (id, topic, payload, payload_version)
  SELECT 'rss' || g, 'spool_rss', convert_to(repeat('x', $PAYLOAD_BYTES), 'UTF8'), 1 FROM generate_series(1, $RSS_BACKLOG) g"
rss "relay" "$SPOOL_CLI" relay --db "$URI" --sink file:/dev/null --concurrency 16 --notify
psql_bench -c 'TRUNCATE queue_messages, queue_messages_failed, ops_queue, outbox_messages'

# ---- the CLI runtimes at work: drain rate with a no-op handler ----
# A backlog of CLI_BACKLOG rows (written by SQL in the library's row format)
# drained by `spool mq work --exec true --batch 100` (one command run per
# claimed batch), `spool ops work --exec true --batch 100` (likewise, one run
# per claimed batch of a type) and `spool relay --sink file:/dev/null`, at
# concurrency 1, 4 and 16; the rate is rows gone over the time until none is
# left. The ratio lines set each beside the library loop (W3, batch 100).
CLI_BACKLOG=${CLI_BACKLOG:-50000}
[[ -n ${QUICK:-} ]] && CLI_BACKLOG=300
# cli_runtime NAME CONCURRENCY ROWS_SQL CMD…: one {"kind":"cli_runtime"} line; ROWS_SQL
# selects the rows left.
# The clock starts when the runtime has taken its first rows, not when its
# process starts: the library loop (W3) it is set beside is timed from its
# first claim, with its connections already open, and a process's start
# (connections, the fail-fast metrics read over the whole backlog) took up to
# a tenth of a one-worker drain of 50,000 rows. One psql session counts the
# rows every 20 ms until that moment (a short phase), then asks every 50 ms
# whether a row is left (EXISTS stops at the first): a psql started for a
# count(*) every 50 ms took about 15 % of this 2-core machine from the runtime
# it measured (docs/BENCHMARKS.md, round 6).
cli_runtime() {
  local name=$1 conc=$2 rows_sql=$3 pid t0 t1 left line started=$CLI_BACKLOG startup
  shift 3
  local t_spawn
  t_spawn=$(date +%s.%N)
  "$@" >/dev/null 2>"$WORK/cli_runtime.log" &
  pid=$!
  while read -r line; do
    if [[ $line =~ ^[0-9]+$ ]] && ((line < CLI_BACKLOG)); then
      started=$line
      break
    fi
  done < <(printf '%s \\watch 0.02\n' "SELECT count(*) FROM ($rows_sql) AS r" | timeout 300 "$PG_BIN/psql" -X -q -A -t -d "$URI")
  t0=$(date +%s.%N)
  while read -r line; do
    [[ $line == f ]] && break
  done < <(printf '%s \\watch 0.05\n' "SELECT EXISTS ($rows_sql)" | timeout 300 "$PG_BIN/psql" -X -q -A -t -d "$URI")
  t1=$(date +%s.%N)
  left=$(psql_bench -A -t -c "SELECT count(*) FROM ($rows_sql) AS r")
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  startup=$(awk -v a="$t_spawn" -v b="$t0" 'BEGIN { printf "%.3f", b - a }')
  jq -c -n --arg p "$name" --argjson c "$conc" --argjson n "$((started - left))" --argjson backlog "$CLI_BACKLOG" \
    --argjson s "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" --argjson startup "$startup" \
    '{kind:"cli_runtime", engine:"postgres", process:$p, concurrency:$c, batch:100, backlog:$backlog, messages:$n,
      seconds:$s, startup_seconds:$startup, msgs_per_s:(($n / $s * 10 | round) / 10)}' | emit
}
say "the CLI runtimes draining $CLI_BACKLOG rows at concurrency 1, 4 and 16"
for conc in 1 4 16; do
  psql_bench -c "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
    SELECT 'cli-' || g, 'spool_cli', NULL, NULL, floor(extract(epoch FROM now()))::bigint,
      '{\"id\":\"cli-' || g || '\",\"poolCode\":\"bench\",\"mediationType\":\"HTTP\",\"mediationTarget\":\"https://bench.example.com/hook\",\"pad\":\"' || repeat('x', 100) || '\"}',
      floor(extract(epoch FROM now()))::bigint, 0 FROM generate_series(1, $CLI_BACKLOG) g" -c 'VACUUM ANALYZE queue_messages'
  cli_runtime "mq work" "$conc" "SELECT 1 FROM queue_messages WHERE queue_name = 'spool_cli'" \
    "$SPOOL_CLI" mq work --db "$URI" --queue spool_cli --exec true --batch 100 --concurrency "$conc"
  # enqueued_at a microsecond apart, as enqueue_batch writes them: the legacy
  # index orders by (status, priority, enqueued_at) only, so ops that all share
  # one enqueued_at are sorted as a whole by every claim (20,000 ties: 30 ms).
  psql_bench -c "INSERT INTO ops_queue (id, type, payload, enqueued_at)
    SELECT 'cli' || g, 'spool_cli', '{}', now() + g * interval '1 microsecond' FROM generate_series(1, $CLI_BACKLOG) g" \
    -c 'VACUUM ANALYZE ops_queue'
  cli_runtime "ops work" "$conc" "SELECT 1 FROM ops_queue WHERE type = 'spool_cli' AND status IN ('pending', 'running')" \
    "$SPOOL_CLI" ops work --db "$URI" --type spool_cli --exec true --batch 100 --concurrency "$conc"
  psql_bench -c "INSERT INTO outbox_messages (id, topic, payload, payload_version)
    SELECT 'cli' || g, 'spool_cli', convert_to(repeat('x', $PAYLOAD_BYTES), 'UTF8'), 1 FROM generate_series(1, $CLI_BACKLOG) g" \
    -c 'VACUUM ANALYZE outbox_messages'
  cli_runtime "relay" "$conc" "SELECT 1 FROM outbox_messages WHERE topic = 'spool_cli' AND state IN ('pending', 'leased')" \
    "$SPOOL_CLI" relay --db "$URI" --sink file:/dev/null --concurrency "$conc" --batch 100
  psql_bench -c 'TRUNCATE queue_messages, queue_messages_failed, ops_queue, outbox_messages'
done

fi  # FLOORS_ONLY

# ---- the floor: PostgreSQL with no queue semantics at all ----
say "pgbench floor"
SYNC=$(psql_bench -A -t -c 'SHOW synchronous_commit')
FSYNC=$(psql_bench -A -t -c 'SHOW fsync')
psql_bench -c 'CREATE TABLE floor_q (id bigserial PRIMARY KEY, payload text NOT NULL)'
cat >"$WORK/floor_insert.sql" <<'EOF'
INSERT INTO floor_q (payload) SELECT repeat('x', :pad) FROM generate_series(1, :batch);
EOF
cat >"$WORK/floor_claim.sql" <<'EOF'
DELETE FROM floor_q WHERE id = ANY(ARRAY(SELECT id FROM floor_q ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED));
EOF
# The at-least-once floor: the minimal visibility-timeout queue (the shape of
# the fastest peer's cycle), written by us. A claim UPDATE that sets the
# visibility and counts the read, committed; then a DELETE of the claimed ids,
# committed: two transactions per batch, as every Spool drain has.
psql_bench -c 'CREATE TABLE floor_alo (id bigserial PRIMARY KEY, vt timestamptz NOT NULL DEFAULT now(),
  reads integer NOT NULL DEFAULT 0, payload text NOT NULL)' -c 'CREATE INDEX ON floor_alo (vt)'
cat >"$WORK/floor_alo.sql" <<'EOF'
WITH claimed AS (UPDATE floor_alo SET vt = now() + interval '30 seconds', reads = reads + 1 WHERE id IN (SELECT id FROM floor_alo WHERE vt <= now() ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED) RETURNING id, payload) SELECT COALESCE(array_agg(id), '{}') AS ids FROM claimed \gset
DELETE FROM floor_alo WHERE id = ANY(:ids::bigint[]);
EOF
# The lease-and-keep floor: the minimal job queue that keeps its finished rows
# (the op queue's and the outbox's cycle, written by us). A claim UPDATE that
# takes a lease and counts the attempt, walking a partial index of pending
# ids, committed; then an UPDATE of the claimed ids to done, committed.
psql_bench -c "CREATE TABLE floor_kept (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'pending',
  attempts integer NOT NULL DEFAULT 0, leased_until timestamptz, finished_at timestamptz, payload text NOT NULL)" \
  -c "CREATE INDEX ON floor_kept (id) WHERE state = 'pending'"
cat >"$WORK/floor_kept.sql" <<'EOF'
WITH claimed AS (UPDATE floor_kept SET state = 'running', attempts = attempts + 1, leased_until = now() + interval '30 seconds' WHERE id IN (SELECT id FROM floor_kept WHERE state = 'pending' ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED) RETURNING id, payload) SELECT COALESCE(array_agg(id), '{}') AS ids FROM claimed \gset
UPDATE floor_kept SET state = 'done', finished_at = now(), leased_until = NULL WHERE id = ANY(:ids::bigint[]) AND state = 'running';
EOF

# The held session of the held-snapshot floor: psql reading a FIFO, inside a
# REPEATABLE READ transaction whose snapshot its SELECT took.
hold_snapshot() {
  mkfifo "$WORK/held.fifo"
  "$PG_BIN/psql" -X -q -d "$URI" <"$WORK/held.fifo" >/dev/null &
  HELD_PID=$!
  exec 7>"$WORK/held.fifo"
  echo "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM floor_q;" >&7
  local i
  for i in $(seq 1 100); do
    [[ $(psql_bench -A -t -c "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND backend_xmin IS NOT NULL") -ge 1 ]] && return 0
    sleep 0.05
  done
  say "the held session did not take its snapshot"
  exit 1
}
release_snapshot() {
  echo "ROLLBACK;" >&7
  exec 7>&-
  wait "$HELD_PID" || true
  HELD_PID=""
  rm -f "$WORK/held.fifo"
}

# floor WORKLOAD BATCH CLIENTS MESSAGES [held]: MESSAGES messages through
# pgbench (floor_claim from a preloaded backlog of BACKLOG), one JSON line.
floor() {
  local workload=$1 batch=$2 clients=$3 messages=$4 held=${5:-} tps rate
  psql_bench -c 'TRUNCATE floor_q, floor_alo, floor_kept'
  if [[ $workload == floor_claim ]]; then
    psql_bench -c "INSERT INTO floor_q (payload) SELECT repeat('x', $PAYLOAD_BYTES) FROM generate_series(1, $BACKLOG)" \
      -c 'ANALYZE floor_q'
  elif [[ $workload == floor_alo || $workload == floor_kept ]]; then
    psql_bench -c "INSERT INTO $workload (payload) SELECT repeat('x', $PAYLOAD_BYTES) FROM generate_series(1, $BACKLOG)" \
      -c "ANALYZE $workload"
  elif [[ $workload == floor_*_layout ]]; then
    psql_bench -v backlog="$BACKLOG" -v pad="$PAYLOAD_BYTES" -f "$LAYOUT_FLOORS/${workload#floor_}_fill.sql"
  fi
  [[ -n $held ]] && hold_snapshot
  local per_client=$((messages / (batch * clients)))
  ((per_client > 0)) || per_client=1
  local script=$WORK/$workload.sql
  [[ $workload == floor_*_layout ]] && script=$LAYOUT_FLOORS/${workload#floor_}.sql
  tps=$("$PG_BIN/pgbench" -n -M prepared -c "$clients" -j "$clients" -t "$per_client" \
    -D batch="$batch" -D pad="$PAYLOAD_BYTES" -f "$script" "$URI" 2>>"$WORK/pgbench.log" |
    sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -n 1)
  [[ -n $held ]] && release_snapshot
  [[ -n $tps ]] || { say "pgbench $workload failed; see below"; cat "$WORK/pgbench.log" >&2; exit 1; }
  rate=$(awk -v t="$tps" -v b="$batch" 'BEGIN { printf "%.1f", t * b }')
  local n=$((per_client * batch * clients))
  jq -c -n --arg w "$workload" --argjson n "$n" --argjson pad "$PAYLOAD_BYTES" --argjson b "$batch" \
    --argjson c "$clients" --arg sync "$SYNC" --arg fsync "$FSYNC" --argjson rate "$rate" \
    --argjson backlog "$([[ $workload == floor_insert || $workload == floor_*_insert_layout ]] && echo 0 || echo "$BACKLOG")" \
    --argjson held "$([[ -n $held ]] && echo true || echo false)" \
    '{kind:"floor", engine:"postgres", workload:$w, messages:$n, payload_bytes:$pad, batch:$b, clients:$c,
      backlog:$backlog, synchronous_commit:$sync, fsync:$fsync, held_snapshot:$held, msgs_per_s:$rate,
      seconds:(($n / $rate * 1000 | round) / 1000)}' | emit
}
floor floor_insert 1 1 "$FLOOR_INSERT1_MESSAGES"
floor floor_insert 100 1 "$FLOOR_INSERT100_MESSAGES"
for clients in 1 4 16; do
  for w in floor_alo floor_kept floor_claim; do
    floor "$w" 1 "$clients" "$FLOOR_CLAIM1_MESSAGES"
    floor "$w" 100 "$clients" "$BACKLOG"
  done
done
# The lease-and-keep cycle on the op queue's and the outbox's own tables
# (after the Spool workloads, which leave them empty): what their layouts
# allow the drain at batch 1 and 100, so a ratio to it shows the statements'
# own cost apart from the indexes and constraints the specs require.
LAYOUT_FLOORS=$ROOT/bench/floors
"$SPOOL_CLI" migrate --db "$URI" >/dev/null
for cap in mq ops outbox; do
  floor "floor_${cap}_insert_layout" 1 1 "$FLOOR_INSERT1_MESSAGES"
  floor "floor_${cap}_insert_layout" 100 1 "$FLOOR_INSERT100_MESSAGES"
done
for clients in 1 4 16; do
  for cap in ops outbox; do
    floor "floor_${cap}_layout" 1 "$clients" "$FLOOR_CLAIM1_MESSAGES"
    floor "floor_${cap}_layout" 100 "$clients" "$BACKLOG"
  done
done
psql_bench -c 'TRUNCATE queue_messages, ops_queue, outbox_messages' -c 'DROP SEQUENCE IF EXISTS floor_ids'
for w in floor_alo floor_kept floor_claim; do
  floor "$w" 1 4 "$FLOOR_CLAIM1_MESSAGES" held
  floor "$w" 100 4 "$BACKLOG" held
done

# ---- ratios ----
jq -c -s '
  (map(select(.kind == "floor"))) as $floors
  # The drain floors, the same cycle first: claim and delete for
  # the message queue, lease and keep for the op queue and the outbox.
  | def cycle_floors($cap): (if $cap == "mq" then ["floor_alo", "floor_kept"]
                             elif $cap == "ops" then ["floor_kept", "floor_ops_layout", "floor_alo"]
                             else ["floor_kept", "floor_outbox_layout", "floor_alo"] end)
                            + ["floor_claim"];
  def floor_of($k): ($floors | map(select(.workload == $k.w and .batch == $k.b and .clients == $k.c
                                            and .held_snapshot == $k.h)) | first);
  map(select(.kind == null and .engine == "postgres")) as $spool
  | ($spool[]
     | . as $l
     | (if .workload == "W1" then [{w: "floor_insert", b: 1, c: 1, h: false},
                                    {w: "floor_\(.capability)_insert_layout", b: 1, c: 1, h: false}]
        elif .workload == "W2" then [{w: "floor_insert", b: 100, c: 1, h: false},
                                     {w: "floor_\(.capability)_insert_layout", b: 100, c: 1, h: false}]
        elif .workload == "W3" then
          [cycle_floors(.capability)[] | {w: ., b: $l.consumer_batch, c: $l.workers, h: $l.held_snapshot}]
        elif .workload == "backlog" then [cycle_floors(.capability)[] | {w: ., b: 1, c: 1, h: false}]
        else [] end)[] as $k
     | floor_of($k) as $f
     | select($f != null)
     | {kind: "ratio", engine: "postgres", capability: .capability, workload: .workload, backlog: .backlog,
        producer_batch: .producer_batch, consumer_batch: .consumer_batch, workers: .workers,
        held_snapshot: .held_snapshot, spool_msgs_per_s: .msgs_per_s, floor: $f.workload, floor_batch: $f.batch,
        floor_clients: $f.clients, floor_held_snapshot: $f.held_snapshot, floor_msgs_per_s: $f.msgs_per_s,
        groups: .groups,
        ratio: ((.msgs_per_s / $f.msgs_per_s * 1000 | round) / 1000)} | with_entries(select(.value != null))),
    (map(select(.kind == null and .workload == "backlog")) | group_by([.engine, .capability, (.groups // 0)])[]
     | sort_by(.backlog) | select(length >= 2)
     | {kind: "backlog_growth", engine: .[0].engine, capability: .[0].capability, groups: (.[0].groups // 0),
        small_backlog: .[0].backlog,
        large_backlog: .[-1].backlog, small_us_per_msg: .[0].us_per_msg, large_us_per_msg: .[-1].us_per_msg,
        growth: ((.[-1].us_per_msg / .[0].us_per_msg * 1000 | round) / 1000)}),
    (map(select(.kind == null and .workload == "W3" and (.held_snapshot | not))) as $loops
     | (map(select(.kind == null and .workload == "runtime")) + map(select(.kind == "cli_runtime")))[]
     | . as $r
     | ($r.capability // ({"mq work": "mq", "ops work": "ops", "relay": "outbox"}[$r.process])) as $cap
     | ($loops | map(select(.engine == $r.engine and .capability == $cap
                             and .consumer_batch == ($r.consumer_batch // $r.batch)
                             and .workers == ($r.workers // $r.concurrency))) | first) as $l
     | select($l != null)
     | {kind: "runtime_vs_loop", engine: $r.engine, capability: $cap, runtime: ($r.runtime // ("spool " + $r.process)),
        workers: $l.workers, consumer_batch: $l.consumer_batch, runtime_msgs_per_s: $r.msgs_per_s,
        loop_msgs_per_s: $l.msgs_per_s, ratio: (($r.msgs_per_s / $l.msgs_per_s * 1000 | round) / 1000)}),
    (map(select(.kind == null and .workload == "W3" and .workers == 4)) | group_by([.engine, .capability, .consumer_batch])[]
     | (map(select(.held_snapshot)) | first) as $h | (map(select(.held_snapshot | not)) | first) as $c
     | select($h != null and $c != null)
     | {kind: "held_vs_clean", engine: $h.engine, capability: $h.capability, consumer_batch: $h.consumer_batch,
        workers: 4, held_msgs_per_s: $h.msgs_per_s, clean_msgs_per_s: $c.msgs_per_s,
        ratio: (($h.msgs_per_s / $c.msgs_per_s * 1000 | round) / 1000)})
' "$OUT" | emit

say "done in $(($(date +%s) - START)) s; results in $OUT"
