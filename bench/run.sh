#!/usr/bin/env bash
# bench/run.sh — spool::mq, spool::outbox and spool::ops throughput on
# PostgreSQL and SQLite, next to what PostgreSQL itself can do with the simplest possible
# queue table (the floor).
#
#   bench/run.sh [> results.jsonl]
#
# Starts a throwaway PostgreSQL (tests/support/pg_server.sh: fsync and
# synchronous_commit are off there, and every result line says so), creates a
# database "bench", and runs:
#   1. spool_mq_bench on PostgreSQL (it runs spool::migrate itself);
#   2. spool_mq_bench on a SQLite file in a temp directory (synchronous=FULL, so
#      every commit is an fsync: fewer messages by default to keep the run short);
#   3. spool_outbox_bench on both engines (insert in 1- and 100-envelope
#      transactions; claim + mark_delivered with 1, 4 and 16 claimers);
#   4. spool_ops_bench on both engines (enqueue one op per transaction and 100
#      per enqueue_batch; drain by dequeue + ack and by a worker_pool with a
#      no-op handler, with 1, 4 and 16 workers);
#   5. pgbench with custom scripts on a minimal table floor_q(id, payload):
#      floor_insert  INSERT … SELECT FROM generate_series(1, batch) per transaction;
#      floor_claim   DELETE … WHERE ctid = ANY(ARRAY(SELECT ctid … ORDER BY id LIMIT batch
#                    FOR UPDATE SKIP LOCKED)), i.e. claim-and-delete in one statement;
#   6. the ratios spool/floor: mq publish batch 100 and drain batch 100 (1 and
#      4 workers) against floor_insert / floor_claim batch 100; ops
#      enqueue_batch against floor_insert batch 100; ops drain_direct with 1
#      worker (one op per claim) against floor_claim batch 1.
# Every result is one JSON line on stdout; progress goes to stderr. The server
# is stopped on exit, also on failure or Ctrl-C. Nothing here asserts timings.
#
# Environment: SPOOL_MQ_BENCH (the binary; default build-bench/bench/spool_mq_bench),
# SPOOL_OUTBOX_BENCH (default build-bench/bench/spool_outbox_bench),
# SPOOL_OPS_BENCH (default build-bench/bench/spool_ops_bench),
# MESSAGES (PostgreSQL and floor, default 10000), SQLITE_MESSAGES (default 2000),
# OPS (ops per op-queue workload on PostgreSQL, default MESSAGES),
# SQLITE_OPS (on SQLite, default SQLITE_MESSAGES), PAYLOAD_BYTES (default 256).
set -Eeuo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=${SPOOL_MQ_BENCH:-$ROOT/build-bench/bench/spool_mq_bench}
OUTBOX_BENCH=${SPOOL_OUTBOX_BENCH:-$ROOT/build-bench/bench/spool_outbox_bench}
OPS_BENCH=${SPOOL_OPS_BENCH:-$ROOT/build-bench/bench/spool_ops_bench}
MESSAGES=${MESSAGES:-10000}
SQLITE_MESSAGES=${SQLITE_MESSAGES:-2000}
OPS=${OPS:-$MESSAGES}
SQLITE_OPS=${SQLITE_OPS:-$SQLITE_MESSAGES}
PAYLOAD_BYTES=${PAYLOAD_BYTES:-256}
PG_SERVER=$ROOT/tests/support/pg_server.sh

say() { echo "run.sh: $*" >&2; }

[[ -x $BENCH ]] || {
  say "$BENCH is not built; run: cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build-bench -j2 --target spool_mq_bench"
  exit 1
}
[[ -x $OUTBOX_BENCH ]] || {
  say "$OUTBOX_BENCH is not built; run: cmake --build build-bench -j2 --target spool_outbox_bench"
  exit 1
}
[[ -x $OPS_BENCH ]] || {
  say "$OPS_BENCH is not built; run: cmake --build build-bench -j2 --target spool_ops_bench"
  exit 1
}
PG_BIN=$(pg_config --bindir 2>/dev/null || true)
[[ -n $PG_BIN && -x $PG_BIN/pgbench ]] || PG_BIN=/usr/lib/postgresql/15/bin
[[ -x $PG_BIN/pgbench && -x $PG_BIN/psql ]] || { say "pgbench/psql not found in $PG_BIN"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/spool-bench.XXXXXX")
cleanup() {
  "$PG_SERVER" stop "$WORK/pg" >/dev/null 2>&1 || say "could not stop the server in $WORK/pg"
  rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # run the EXIT trap on Ctrl-C too

"$PG_SERVER" start "$WORK/pg" >&2
ADMIN_URI=$(<"$WORK/pg/uri")
URI=${ADMIN_URI%/*}/bench
psql_bench() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$URI" "$@"; }
"$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$ADMIN_URI" -c 'CREATE DATABASE bench'

RESULTS=$WORK/results.jsonl
: >"$RESULTS"

say "spool on PostgreSQL ($MESSAGES messages per workload)"
"$BENCH" --db "$URI" --messages "$MESSAGES" --payload-bytes "$PAYLOAD_BYTES" | tee -a "$RESULTS"

say "spool on SQLite ($SQLITE_MESSAGES messages per workload)"
mkdir -p "$WORK/sqlite"
"$BENCH" --db "sqlite:$WORK/sqlite/bench.db" --messages "$SQLITE_MESSAGES" --payload-bytes "$PAYLOAD_BYTES" |
  tee -a "$RESULTS"

say "spool outbox on PostgreSQL ($MESSAGES envelopes per workload)"
"$OUTBOX_BENCH" --db "$URI" --messages "$MESSAGES" --payload-bytes "$PAYLOAD_BYTES" | tee -a "$RESULTS"

say "spool outbox on SQLite ($SQLITE_MESSAGES envelopes per workload)"
"$OUTBOX_BENCH" --db "sqlite:$WORK/sqlite/outbox.db" --messages "$SQLITE_MESSAGES" --payload-bytes "$PAYLOAD_BYTES" |
  tee -a "$RESULTS"

say "spool ops on PostgreSQL ($OPS ops per workload)"
"$OPS_BENCH" --db "$URI" --ops "$OPS" --payload-bytes "$PAYLOAD_BYTES" | tee -a "$RESULTS"

say "spool ops on SQLite ($SQLITE_OPS ops per workload)"
"$OPS_BENCH" --db "sqlite:$WORK/sqlite/ops.db" --ops "$SQLITE_OPS" --payload-bytes "$PAYLOAD_BYTES" |
  tee -a "$RESULTS"

# ---- the floor: PostgreSQL with no queue semantics at all ----
say "pgbench floor ($MESSAGES messages per run)"
SYNC=$(psql_bench -A -t -c 'SHOW synchronous_commit')
FSYNC=$(psql_bench -A -t -c 'SHOW fsync')
psql_bench -c 'CREATE TABLE floor_q (id bigserial PRIMARY KEY, payload text NOT NULL)'
cat >"$WORK/floor_insert.sql" <<'EOF'
INSERT INTO floor_q (payload) SELECT repeat('x', :pad) FROM generate_series(1, :batch);
EOF
cat >"$WORK/floor_claim.sql" <<'EOF'
DELETE FROM floor_q WHERE ctid = ANY(ARRAY(SELECT ctid FROM floor_q ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED));
EOF

# floor WORKLOAD BATCH CLIENTS: runs MESSAGES messages through pgbench, prints one JSON line.
floor() {
  local workload=$1 batch=$2 clients=$3 tps rate
  psql_bench -c 'TRUNCATE floor_q'
  if [[ $workload == floor_claim ]]; then
    psql_bench -c "INSERT INTO floor_q (payload) SELECT repeat('x', $PAYLOAD_BYTES) FROM generate_series(1, $MESSAGES)" \
      -c 'VACUUM ANALYZE floor_q'
  fi
  local per_client=$((MESSAGES / (batch * clients)))
  tps=$("$PG_BIN/pgbench" -n -M prepared -c "$clients" -j "$clients" -t "$per_client" \
    -D batch="$batch" -D pad="$PAYLOAD_BYTES" -f "$WORK/$workload.sql" "$URI" 2>>"$WORK/pgbench.log" |
    sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -n 1)
  [[ -n $tps ]] || { say "pgbench $workload failed; see below"; cat "$WORK/pgbench.log" >&2; exit 1; }
  rate=$(awk -v t="$tps" -v b="$batch" 'BEGIN { printf "%.1f", t * b }')
  local n=$((per_client * batch * clients))
  printf '{"engine":"postgres","workload":"%s","messages":%d,"payload_bytes":%d,"batch":%d,"clients":%d,"synchronous_commit":"%s","fsync":"%s","msgs_per_s":%s,"seconds":%s}\n' \
    "$workload" "$n" "$PAYLOAD_BYTES" "$batch" "$clients" "$SYNC" "$FSYNC" "$rate" \
    "$(awk -v n="$n" -v r="$rate" 'BEGIN { printf "%.3f", n / r }')" | tee -a "$RESULTS"
}
floor floor_insert 1 1
floor floor_insert 100 1
floor floor_claim 1 1
floor floor_claim 1 4
floor floor_claim 100 1
floor floor_claim 100 4

# ---- ratios ----
# rate_of PATTERN...: msgs_per_s (ops_per_s for the op queue) of the one
# PostgreSQL line matching every pattern.
rate_of() {
  local lines
  lines=$(grep '"engine":"postgres"' "$RESULTS")
  for p in "$@"; do lines=$(grep -F -- "$p" <<<"$lines" || true); done
  sed -nE 's/.*"(msgs|ops)_per_s":([0-9.eE+-]+).*/\2/p' <<<"$lines" | head -n 1
}
# ratio NAME BATCH WORKERS SPOOL_RATE FLOOR_RATE [UNIT]: one JSON line; UNIT
# (msgs or ops, default msgs) names the spool rate's key as its bench does.
ratio() {
  local name=$1 batch=$2 workers=$3 spool=$4 floor=$5 unit=${6:-msgs}
  [[ -n $spool && -n $floor ]] || { say "no data for $name"; return 0; }
  printf '{"engine":"postgres","workload":"%s","batch":%d,"workers":%d,"spool_%s_per_s":%s,"floor_msgs_per_s":%s,"ratio":%s}\n' \
    "$name" "$batch" "$workers" "$unit" "$spool" "$floor" "$(awk -v a="$spool" -v b="$floor" 'BEGIN { printf "%.3f", a / b }')"
}
ratio ratio_publish 100 1 \
  "$(rate_of '"workload":"publish"' '"producer_batch":100,' '"workers":1,')" \
  "$(rate_of '"workload":"floor_insert"' '"batch":100,' '"clients":1,')"
ratio ratio_drain 100 1 \
  "$(rate_of '"workload":"drain"' '"consumer_batch":100,' '"workers":1,')" \
  "$(rate_of '"workload":"floor_claim"' '"batch":100,' '"clients":1,')"
ratio ratio_drain 100 4 \
  "$(rate_of '"workload":"drain"' '"consumer_batch":100,' '"workers":4,')" \
  "$(rate_of '"workload":"floor_claim"' '"batch":100,' '"clients":4,')"
# The op queue: enqueue_batch writes 100 ops per transaction like floor_insert
# batch 100. drain_direct claims one op at a time (dequeue, then ack: two
# transactions per op), so its nearest floor is floor_claim batch 1 (one
# claim-and-delete statement per op), one client each.
ratio ratio_ops_enqueue_batch 100 1 \
  "$(rate_of '"workload":"enqueue_batch"' '"batch":100,' '"workers":1,')" \
  "$(rate_of '"workload":"floor_insert"' '"batch":100,' '"clients":1,')" ops
ratio ratio_ops_drain_direct 1 1 \
  "$(rate_of '"workload":"drain_direct"' '"workers":1,')" \
  "$(rate_of '"workload":"floor_claim"' '"batch":1,' '"clients":1,')" ops
