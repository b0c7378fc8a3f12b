#!/usr/bin/env bash
# bench/sqs/run.sh — the SQS API benchmark (docs/SQS.md, Speed): the cycle
# SendMessageBatch of 10 → ReceiveMessage of 10 → DeleteMessageBatch with 1, 4
# and 16 concurrent clients of the AWS SDK for JavaScript v3 against
# `spool serve`, beside the same cycle through the C++ API (publish_batch →
# poll(10) → ack_batch) in the same run, on one durable PostgreSQL (fsync,
# synchronous_commit, full_page_writes on; tests/support/pg_server.sh with
# SPOOL_PG_DURABLE=1). Measures the CPU of spool serve and of PostgreSQL per
# message. Prints one JSON line per result; nothing asserts timings.
#
#   bench/sqs/run.sh            (WORKERS [1 4 16], RUN_SECONDS [8], PAYLOAD_BYTES [200])
#
# Builds spool and spool_sqs_cycle_bench in build-bench (Release) unless
# SPOOL_CLI and SPOOL_SQS_CYCLE name them; needs node and the test clients
# (scripts/install-npm.sh).
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
WORKERS=${WORKERS:-1 4 16}
# Not SECONDS: bash counts the seconds since the shell started in it.
SECONDS_EACH=${RUN_SECONDS:-8}
PAYLOAD_BYTES=${PAYLOAD_BYTES:-200}
if [[ -z ${SPOOL_CLI:-} || -z ${SPOOL_SQS_CYCLE:-} ]]; then
  cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$ROOT/build-bench" -j"$(nproc)" --target spool_cli spool_sqs_cycle_bench >&2
  SPOOL_CLI=$ROOT/build-bench/spool
  SPOOL_SQS_CYCLE=$ROOT/build-bench/bench/spool_sqs_cycle_bench
fi
bash "$ROOT/scripts/install-npm.sh" >&2
TMP=$(mktemp -d /tmp/spool-sqs-bench.XXXXXX)
SERVE_PID=
cleanup() {
  [[ -n $SERVE_PID ]] && kill "$SERVE_PID" 2>/dev/null || true
  "$ROOT/tests/support/pg_server.sh" stop "$TMP" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
SPOOL_PG_DURABLE=1 "$ROOT/tests/support/pg_server.sh" start "$TMP" >/dev/null
ADMIN=$(cat "$TMP/uri")
psql "$ADMIN" -qc "CREATE DATABASE sqs_bench" >/dev/null
URI=${ADMIN%/*}/sqs_bench
"$SPOOL_CLI" --db "$URI" migrate >/dev/null
POSTMASTER=$(head -1 "$TMP/data/postmaster.pid")
TICKS=$(getconf CLK_TCK)

# CPU seconds of a process (utime + stime), with its reaped children when $2 is set.
cpu_of() {
  awk -v t="$TICKS" -v kids="${2:-}" '{ s = $14 + $15; if (kids != "") s += $16 + $17; printf "%.3f", s / t }' \
    <(sed 's/^.*) //; s/^/x x /' "/proc/$1/stat")
}
pg_cpu() {  # the postmaster, its live children and the ones it reaped
  local total; total=$(cpu_of "$POSTMASTER" kids)
  for c in $(ps --ppid "$POSTMASTER" -o pid=); do
    [[ -r /proc/$c/stat ]] && total=$(awk -v a="$total" -v b="$(cpu_of "$c" 2>/dev/null || echo 0)" 'BEGIN { printf "%.3f", a + b }')
  done
  echo "$total"
}
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

echo "{\"kind\":\"machine\",\"nproc\":$(nproc),\"cpu\":\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\",\"postgres\":\"$(psql "$ADMIN" -Atc 'SHOW server_version')\",\"fsync\":\"$(psql "$ADMIN" -Atc 'SHOW fsync')\",\"synchronous_commit\":\"$(psql "$ADMIN" -Atc 'SHOW synchronous_commit')\",\"full_page_writes\":\"$(psql "$ADMIN" -Atc 'SHOW full_page_writes')\",\"workers\":\"$WORKERS\",\"seconds\":$SECONDS_EACH,\"payload_bytes\":$PAYLOAD_BYTES,\"cycle\":\"send batch 10, receive 10, delete batch\"}"

for w in $WORKERS; do
  # The C++ API.
  psql "$URI" -qc "DELETE FROM queue_messages" >/dev/null
  before=$(pg_cpu)
  line=$("$SPOOL_SQS_CYCLE" --db "$URI" --queue cpp_bench --workers "$w" --seconds "$SECONDS_EACH" --payload-bytes "$PAYLOAD_BYTES")
  sleep 0.5
  pg=$(sub "$(pg_cpu)" "$before")
  echo "${line%\}},\"pg_cpu_s\":$pg}"

  # The JavaScript SDK through spool serve (one server per run, so that its
  # connections end with it and PostgreSQL's CPU for them is counted).
  psql "$URI" -qc "DELETE FROM queue_messages" >/dev/null
  "$SPOOL_CLI" --db "$URI" serve --no-auth --listen 127.0.0.1:0 2>"$TMP/serve.log" &
  SERVE_PID=$!
  for _ in $(seq 100); do grep -q "listening on" "$TMP/serve.log" && break; sleep 0.1; done
  ENDPOINT=$(grep -o 'listening on http[^ ]*' "$TMP/serve.log" | cut -d' ' -f3)
  QUEUE_URL=$(curl -s -X POST "$ENDPOINT/" -H 'X-Amz-Target: AmazonSQS.CreateQueue' \
    -H 'Content-Type: application/x-amz-json-1.0' -d '{"QueueName":"sdk_bench"}' | sed 's/.*"QueueUrl":"\([^"]*\)".*/\1/')
  before=$(pg_cpu)
  serve_before=$(cpu_of "$SERVE_PID")
  line=$(AWS_SDK_JS_SUPPRESS_NODE_VERSION_WARNING=1 node "$ROOT/bench/sqs/cycle.mjs" "$ENDPOINT" "$QUEUE_URL" "$w" "$SECONDS_EACH" "$PAYLOAD_BYTES")
  serve=$(sub "$(cpu_of "$SERVE_PID")" "$serve_before")
  kill -TERM "$SERVE_PID"; wait "$SERVE_PID" || true; SERVE_PID=
  sleep 0.5
  pg=$(sub "$(pg_cpu)" "$before")
  echo "${line%\}},\"serve_cpu_s\":$serve,\"pg_cpu_s\":$pg}"
done
