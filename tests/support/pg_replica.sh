#!/usr/bin/env bash
# pg_replica.sh — a throwaway PostgreSQL 15 primary and a streaming-replication standby on this
# machine, for failover tests (tests/faults). Built on pg_server.sh (sourced): the same binaries,
# the same non-root server user when run as root, the same port search and log layout.
#
#   pg_replica.sh start-primary DIR   a fresh primary in DIR/primary (pg_server.sh start), with
#                                     synchronous_commit = on.
#   pg_replica.sh start-standby DIR   pg_basebackup -R of the primary into a private directory,
#                                     started as a hot standby on its own port (DIR/standby/port,
#                                     DIR/standby/uri). Once it streams, the primary's
#                                     synchronous_standby_names names it, so from then on a commit
#                                     the primary acknowledges is on the standby too. Writes
#                                     DIR/multi_uri: both hosts, target_session_attrs=read-write.
#   pg_replica.sh stop-primary DIR [fast|immediate]
#                                     stops the primary (immediate by default: like a crash); its
#                                     data stays until stop.
#   pg_replica.sh promote DIR         promotes the standby and waits until it accepts writes.
#   pg_replica.sh stop DIR            stops both and removes their data. Idempotent.
#
# The standby's own synchronous_standby_names is empty: once promoted it has no standby, and a
# commit waiting for one would wait forever.
set -Eeuo pipefail

HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=pg_server.sh
source "$HERE/pg_server.sh"
PROG=pg_replica.sh
STANDBY_NAME=spool_standby

replica_usage() {
  echo "usage: $PROG start-primary|start-standby|promote|stop DIR | $PROG stop-primary DIR [fast|immediate]" >&2
  exit 2
}

psql_at() {
  "$BIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "$2"
}

# Waits up to $3 half-seconds for the query $2 on $1 to print "t". The last
# answer (or psql's error) is left in LAST_ANSWER, so that a caller that gives
# up can say what the server said rather than guess.
# Only standard output is the answer: a notice or warning on standard error
# must not turn a "t" into a miss.
LAST_ANSWER=""
wait_true() {
  local uri=$1 sql=$2 n=$3 err answer
  err=$(mktemp)
  while ((n-- > 0)); do
    answer=$(psql_at "$uri" "$sql" 2>"$err" || true)
    if [[ $answer == t ]]; then
      rm -f -- "$err"
      return 0
    fi
    LAST_ANSWER="${answer:-(no answer)}; stderr: $(head -c 600 -- "$err" | tr '\n' ' ')"
    sleep 0.5
  done
  rm -f -- "$err"
  return 1
}

primary_uri() {
  [[ -s $TOP/primary/uri ]] || die "no primary in $TOP: run $PROG start-primary $TOP first"
  cat -- "$TOP/primary/uri"
}

do_start_primary() {
  find_bindir
  "$HERE/pg_server.sh" start "$TOP/primary" >/dev/null
  local uri
  uri=$(primary_uri)
  # pg_server.sh's cluster runs synchronous_commit = off; a failover test needs a commit's
  # acknowledgement to mean that it is durable (and, with a standby, replicated).
  psql_at "$uri" "ALTER SYSTEM SET synchronous_commit = on" >/dev/null
  psql_at "$uri" "SELECT pg_reload_conf()" >/dev/null
  echo "$PROG: primary running at $uri"
}

do_start_standby() {
  find_bindir
  local puri pport
  puri=$(primary_uri)
  pport=$(<"$TOP/primary/port")
  resolve_dir "$TOP/standby" yes
  do_stop quiet
  rm -f -- "$DIR/uri" "$DIR/port" "$DIR/log" "$DIR/runtime_dir"
  # Always a private runtime directory under /tmp: short socket paths, reachable by the server user.
  RUN=$(mktemp -d /tmp/spool-pgr.XXXXXX)
  if is_root; then chown "$PG_USER:" "$RUN"; fi
  chmod 0755 "$RUN"
  echo "$RUN" >"$DIR/runtime_dir"
  ln -sfn -- "$RUN/log" "$DIR/log"
  LOG=$RUN/log
  : >"$LOG"
  if is_root; then chown "$PG_USER:" "$LOG"; fi
  trap 'fail_start "unexpected error at line $LINENO"' ERR

  echo "== pg_basebackup from port $pport ($(date '+%F %T')) ==" >>"$LOG"
  as_pg "$BIN/pg_basebackup" -h 127.0.0.1 -p "$pport" -U postgres -D "$RUN/data" -R -X stream -c fast \
    --no-sync >>"$LOG" 2>&1 || fail_start "pg_basebackup failed"
  cat >>"$RUN/data/postgresql.auto.conf" <<EOF
# ---- added by tests/support/pg_replica.sh: the standby ----
cluster_name = '$STANDBY_NAME'
unix_socket_directories = '$RUN'
synchronous_standby_names = ''
synchronous_commit = on
hot_standby = on
EOF

  local attempt port="" started="" out=""
  for attempt in $(seq 0 29); do
    port=$((20000 + ($$ * 11 + 7919 + attempt * 331) % 12768))  # below the ephemeral ports, as pg_server.sh
    port_is_free "$port" || continue
    echo "== pg_ctl start on port $port ($(date '+%F %T')) ==" >>"$LOG"
    local seen
    seen=$(wc -l <"$LOG")
    if out=$(as_pg "$BIN/pg_ctl" -D "$RUN/data" -l "$LOG" -o "-p $port" -w -t 60 start 2>&1); then
      started=yes
      break
    fi
    if tail -n "+$((seen + 1))" -- "$LOG" | grep -qE 'could not bind|Address already in use|could not create lock file'; then
      as_pg "$BIN/pg_ctl" -D "$RUN/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
      continue
    fi
    fail_start "pg_ctl start failed: ${out//$'\n'/ }"
  done
  [[ -n $started ]] || fail_start "no free port found in 20000-32767"
  local uri="postgresql://postgres@127.0.0.1:$port/postgres"
  echo "$port" >"$DIR/port"
  echo "$uri" >"$DIR/uri"

  wait_true "$puri" "SELECT EXISTS (SELECT 1 FROM pg_stat_replication
                     WHERE application_name = '$STANDBY_NAME' AND state = 'streaming')" 120 ||
    fail_start "the standby on port $port does not stream from the primary on port $pport"
  psql_at "$puri" "ALTER SYSTEM SET synchronous_standby_names = '$STANDBY_NAME'" >/dev/null
  psql_at "$puri" "SELECT pg_reload_conf()" >/dev/null
  wait_true "$puri" "SELECT EXISTS (SELECT 1 FROM pg_stat_replication
                     WHERE application_name = '$STANDBY_NAME' AND sync_state = 'sync')" 120 ||
    fail_start "the standby on port $port did not become the primary's synchronous standby"
  trap - ERR
  echo "postgresql://postgres@127.0.0.1:$pport,127.0.0.1:$port/postgres?target_session_attrs=read-write" \
    >"$TOP/multi_uri"
  echo "$PROG: standby running at $uri (synchronous standby of port $pport)"
}

do_stop_primary() {
  local mode=${1:-immediate}
  [[ $mode == fast || $mode == immediate ]] || die "unknown stop mode '$mode': use fast or immediate"
  find_bindir
  resolve_dir "$TOP/primary" no
  [[ -n $DIR ]] || die "no primary in $TOP"
  as_pg "$BIN/pg_ctl" -D "$RUN/data" -m "$mode" -w -t 60 stop >/dev/null ||
    die "could not stop the primary ($mode) in $RUN/data; see $DIR/log"
  echo "$PROG: primary stopped ($mode)"
}

do_promote() {
  find_bindir
  resolve_dir "$TOP/standby" no
  [[ -n $DIR && -s $DIR/uri ]] || die "no standby in $TOP: run $PROG start-standby $TOP first"
  as_pg "$BIN/pg_ctl" -D "$RUN/data" -w -t 60 promote >/dev/null ||
    die "could not promote the standby in $RUN/data; see $DIR/log"
  # On failure the message carries the probe's last answer and the log's
  # tail: the test's temporary directory, and the log with it, is gone by the
  # time anyone reads a CI log (chaos_many_hosts failed here once, 2026-12-07,
  # with nothing else to go on).
  wait_true "$(<"$DIR/uri")" "SELECT NOT pg_is_in_recovery()" 120 ||
    die "the promoted standby did not leave recovery within 60 s; last answer to SELECT NOT pg_is_in_recovery(): ${LAST_ANSWER:-none}; the end of $DIR/log:
$(tail -n 40 -- "$DIR/log" 2>/dev/null)"
  echo "$PROG: standby promoted"
}

do_stop_both() {
  local rc=0
  resolve_dir "$TOP/standby" no
  do_stop quiet || rc=1
  "$HERE/pg_server.sh" stop "$TOP/primary" >/dev/null || rc=1
  rm -f -- "$TOP/multi_uri"
  ((rc == 0)) || die "could not stop every server in $TOP"
  echo "$PROG: stopped the primary and the standby in $TOP"
}

[[ ($# -eq 2 || ($# -eq 3 && $1 == stop-primary)) && -n $2 ]] || replica_usage
mkdir -p -- "$2"
TOP=$(cd -- "$2" && pwd -P)
case $1 in
  start-primary) do_start_primary ;;
  start-standby) do_start_standby ;;
  stop-primary) do_stop_primary "${3:-immediate}" ;;
  promote) do_promote ;;
  stop) do_stop_both ;;
  *) replica_usage ;;
esac
