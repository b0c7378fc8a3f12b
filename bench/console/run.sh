#!/usr/bin/env bash
# bench/console/run.sh — how long the console takes with a big queue
# (docs/CONSOLE.md, Speed): MESSAGES rows in one queue (plus a second, small
# queue and quarantined rows), then ROUNDS timed calls of the overview and of
# the first page of the message browser (50 rows), and one later page,
# through the real `spool serve` (curl's time_total, keep-alive off), on
# SQLite (synchronous = FULL) and on a durable PostgreSQL (fsync,
# synchronous_commit, full_page_writes on). Prints one JSON line per figure;
# nothing asserts timings.
#
#   bench/console/run.sh        (MESSAGES [1000000], ROUNDS [5], ENGINES [sqlite postgres])
#
# Uses SPOOL_CLI, or builds spool in build-bench (Release).
set -Eeuo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd)
MESSAGES=${MESSAGES:-1000000}
ROUNDS=${ROUNDS:-5}
ENGINES=${ENGINES:-sqlite postgres}
if [[ -z ${SPOOL_CLI:-} ]]; then
  cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$ROOT/build-bench" -j"$(nproc)" --target spool_cli >&2
  SPOOL_CLI=$ROOT/build-bench/spool
fi
TMP=$(mktemp -d /tmp/spool-console-bench.XXXXXX)
SERVE_PID=
cleanup() {
  [[ -n $SERVE_PID ]] && kill "$SERVE_PID" 2>/dev/null || true
  "$ROOT/tests/support/pg_server.sh" stop "$TMP/pg" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# The rows, written as a legacy producer writes them (ids m0000001…, created over the last day).
seed_sql() {
  local n=$1
  cat <<SQL
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $n)
INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
SELECT printf('m%07d', i), 'big', NULL, NULL, 1764800000 + i % 86400, '{"id":"' || printf('m%07d', i) || '","mediationType":"HTTP","n":' || i || '}', 1764800000 + i % 86400, 0 FROM s;
SQL
}
seed_pg_sql() {
  local n=$1
  cat <<SQL
INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, created_at, receive_count)
SELECT 'm' || lpad(i::text, 7, '0'), 'big', NULL, NULL, 1764800000 + i % 86400, '{"id":"m' || lpad(i::text, 7, '0') || '","mediationType":"HTTP","n":' || i || '}', 1764800000 + i % 86400, 0
FROM generate_series(1, $n) AS i;
INSERT INTO queue_messages_failed (id, queue_name, payload, error_message, receive_count, created_at, failed_at)
SELECT 'f' || i, 'big', 'poison', 'undecodable', 1, 1764800000, 1764800000 + i FROM generate_series(1, 1000) AS i;
ANALYZE;
SQL
}

timed() {  # prints curl's time_total for GET $1 with the session cookie
  curl -s -o /dev/null -H 'Connection: close' -b "$TMP/jar" -w '%{time_total}' "$1"
}

for engine in $ENGINES; do
  if [[ $engine == sqlite ]]; then
    URI=sqlite:$TMP/console.db
    "$SPOOL_CLI" --db "$URI" migrate >/dev/null
    { seed_sql "$MESSAGES"
      echo "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1000) INSERT INTO queue_messages_failed (id, queue_name, payload, error_message, receive_count, created_at, failed_at) SELECT 'f' || i, 'big', 'poison', 'undecodable', 1, 1764800000, 1764800000 + i FROM s; ANALYZE;"
    } | sqlite3 "$TMP/console.db"
    settings='"synchronous":"full"'
  else
    SPOOL_PG_DURABLE=1 "$ROOT/tests/support/pg_server.sh" start "$TMP/pg" >/dev/null
    ADMIN=$(cat "$TMP/pg/uri")
    psql "$ADMIN" -qc "CREATE DATABASE console_bench" >/dev/null
    URI=${ADMIN%/*}/console_bench
    "$SPOOL_CLI" --db "$URI" migrate >/dev/null
    seed_pg_sql "$MESSAGES" | psql "$URI" -q >/dev/null
    settings="\"fsync\":\"$(psql "$ADMIN" -Atc 'SHOW fsync')\",\"synchronous_commit\":\"$(psql "$ADMIN" -Atc 'SHOW synchronous_commit')\",\"full_page_writes\":\"$(psql "$ADMIN" -Atc 'SHOW full_page_writes')\",\"postgres\":\"$(psql "$ADMIN" -Atc 'SHOW server_version')\""
  fi
  echo '{"n":1}' | "$SPOOL_CLI" --db "$URI" mq publish --queue small >/dev/null
  "$SPOOL_CLI" --db "$URI" serve --no-auth --listen 127.0.0.1:0 2>"$TMP/serve.log" &
  SERVE_PID=$!
  for _ in $(seq 100); do grep -q 'listening on' "$TMP/serve.log" && break; sleep 0.1; done
  BASE=$(grep -o 'http://[^ ]*' "$TMP/serve.log")
  curl -s -c "$TMP/jar" "$BASE/console/api/session" >/dev/null
  shown=$(curl -s -b "$TMP/jar" "$BASE/console/api/overview" | jq '[.mq.queues[] | select(.queue == "big")][0].visible')
  echo "{\"kind\":\"machine\",\"engine\":\"$engine\",\"overview_shows\":$shown,\"nproc\":$(nproc),\"cpu\":\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\",\"messages\":$MESSAGES,\"quarantined\":1000,\"rounds\":$ROUNDS,\"page_rows\":50,$settings}"
  for what in overview "mq/messages?queue=big" "mq/messages?queue=big&after=m0500000" "mq/messages?queue=big&state=visible&min_age=3600"; do
    times=()
    for _ in $(seq "$ROUNDS"); do times+=("$(timed "$BASE/console/api/$what")"); done
    sorted=$(printf '%s\n' "${times[@]}" | sort -n | paste -sd,)
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "{\"kind\":\"console\",\"engine\":\"$engine\",\"call\":\"GET /console/api/$what\",\"median_s\":$median,\"times_s\":[$sorted]}"
  done
  page=$(timed "$BASE/console/")
  echo "{\"kind\":\"console\",\"engine\":\"$engine\",\"call\":\"GET /console/ (the page)\",\"median_s\":$page,\"times_s\":[$page]}"
  kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true; SERVE_PID=
done
