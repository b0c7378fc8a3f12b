#!/usr/bin/env bash
# pg_server.sh — a throwaway PostgreSQL 15 server for tests, benchmarks and developers.
#
#   pg_server.sh start DIR    initdb a fresh cluster in DIR/data (replacing any previous one), start it
#                             on 127.0.0.1:<free port> and on a unix socket in DIR, then write
#                             DIR/uri (postgresql://postgres@127.0.0.1:PORT/postgres) and DIR/port.
#   pg_server.sh stop DIR     stop it (fast, then immediate, then SIGKILL) and remove DIR/data.
#                             Idempotent: a DIR with no server (or no DIR at all) is fine.
#   pg_server.sh restart DIR [fast|immediate]
#                             restart the running server in place (same data, same port); for tests
#                             of reconnects. fast (the default) ends sessions cleanly; immediate
#                             kills them like a crash, and the server runs crash recovery on start.
#   pg_server.sh env DIR      print `export SPOOL_TEST_PG_URI=...` for a developer's shell:
#                               eval "$(tests/support/pg_server.sh env /tmp/spool-pg)"
#
# The cluster is for tests only: trust auth, fsync off. Its log is DIR/log.
# SPOOL_PG_LISTEN=ADDR at start also listens on ADDR (a test's own veth address; clients on its
# network are trusted).
# SPOOL_PG_DURABLE=1 at start gives the settings users run instead (fsync, synchronous_commit and
# full_page_writes on, shared_buffers 256MB): the benchmark's default (bench/run.sh).
# SPOOL_PG_TLS=1 at start serves TLS too, with a CA of its own made by openssl: DIR/tls/ca.pem
# (the CA to trust) and a server certificate that names only DNS:localhost, so that
# sslmode=verify-full succeeds for host=localhost and fails for host=127.0.0.1.
#
# PostgreSQL refuses to run as root, and CI runs as root: then the server runs as the system user
# spool-pg (created on first use). If spool-pg cannot reach DIR (a parent directory is private, as
# /root is) or DIR is too long for a unix socket path, the cluster lives in a private directory under
# /tmp instead, recorded in DIR/runtime_dir; DIR/uri, DIR/port and DIR/log are written all the same.
set -Eeuo pipefail

PROG=pg_server.sh
PG_USER=spool-pg
PATH=$PATH:/usr/sbin:/sbin

die() {
  echo "$PROG: $*" >&2
  exit 1
}

usage() {
  echo "usage: $PROG start|stop|env DIR | $PROG restart DIR [fast|immediate]" >&2
  exit 2
}

is_root() { [[ $(id -u) -eq 0 ]]; }

# The server binaries: pg_config's bindir if it has initdb, else Debian's PostgreSQL 15 location.
find_bindir() {
  local d=""
  if command -v pg_config >/dev/null 2>&1; then
    d=$(pg_config --bindir 2>/dev/null || true)
  fi
  if [[ -z $d || ! -x $d/initdb || ! -x $d/pg_ctl ]]; then
    d=/usr/lib/postgresql/15/bin
  fi
  [[ -x $d/initdb && -x $d/pg_ctl ]] ||
    die "could not start PostgreSQL: initdb/pg_ctl not found (tried pg_config --bindir and $d); install postgresql-15 (scripts/install-deps.sh)"
  BIN=$d
}

ensure_pg_user() {
  id -u "$PG_USER" >/dev/null 2>&1 && return 0
  # Two starts racing may both try; the loser's useradd fails but the user exists afterwards.
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --user-group "$PG_USER" \
    >/dev/null 2>&1 || true
  id -u "$PG_USER" >/dev/null 2>&1 ||
    die "could not start PostgreSQL: cannot create the system user $PG_USER (useradd failed; PostgreSQL will not run as root)"
}

# Runs a command as the server's owner: spool-pg when we are root, else ourselves. From / so that a
# working directory spool-pg cannot read does not trip initdb or pg_ctl.
as_pg() {
  if ! is_root; then
    (cd / && "$@")
  elif command -v runuser >/dev/null 2>&1; then
    (cd / && runuser -u "$PG_USER" -- "$@")
  else
    (cd / && setpriv --reuid="$PG_USER" --regid="$PG_USER" --init-groups -- "$@")
  fi
}

# Sets DIR to the absolute form of $1 (creating it when asked) and RUN to where the cluster lives.
resolve_dir() {
  local d=$1 create=$2
  if [[ $create == yes ]]; then
    mkdir -p -- "$d" || die "could not start PostgreSQL: cannot create $d"
  fi
  if [[ ! -d $d ]]; then
    DIR="" RUN=""
    return 0
  fi
  DIR=$(cd -- "$d" && pwd -P)
  RUN=$DIR
  if [[ -s $DIR/runtime_dir ]]; then
    RUN=$(<"$DIR/runtime_dir")
  fi
}

postmaster_pid() {
  local pidfile=$RUN/data/postmaster.pid
  [[ -r $pidfile ]] || return 1
  local pid
  pid=$(head -n 1 "$pidfile" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  echo "$pid"
}

# True when pid is a live postgres process: not gone, not a zombie waiting for its reaper, and not a
# recycled pid of something else.
is_postgres_alive() {
  local pid=$1 stat
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # "pid (comm) S ..." -> "S ..."
  [[ ${stat:0:1} != Z ]] || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == postgres* ]]
}

# Waits up to $2 tenths of a second for pid to go away.
wait_gone() {
  local pid=$1 n=$2
  while ((n-- > 0)); do
    is_postgres_alive "$pid" || return 0
    sleep 0.1
  done
  ! is_postgres_alive "$pid"
}

port_is_free() {
  local port=$1
  if command -v ss >/dev/null 2>&1; then
    [[ -z $(ss -Hltn "sport = :$port" 2>/dev/null) ]] || return 1
  fi
  # Something answering on 127.0.0.1:port means it is taken.
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    return 1
  fi
  [[ ! -e $RUN/.s.PGSQL.$port ]]
}

do_stop() {
  local quiet=${1:-}
  [[ -n $DIR ]] || return 0
  local pid="" what="no server was running in $DIR"
  pid=$(postmaster_pid) || pid=""
  if [[ -n $pid ]] && is_postgres_alive "$pid"; then
    what="stopped PostgreSQL (pid $pid) in $DIR"
    find_bindir
    if is_root && ! id -u "$PG_USER" >/dev/null 2>&1; then
      :  # no spool-pg: not ours to pg_ctl; the kill below still applies
    elif ! as_pg "$BIN/pg_ctl" -D "$RUN/data" -m fast -w -t 30 stop >/dev/null 2>&1; then
      as_pg "$BIN/pg_ctl" -D "$RUN/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    fi
    # pg_ctl returns once postmaster.pid is gone; the process itself may take a moment longer.
    if ! wait_gone "$pid" 100; then
      [[ -n $quiet ]] || echo "$PROG: postgres (pid $pid) survived pg_ctl stop; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      if ! wait_gone "$pid" 100; then
        echo "$PROG: could not stop postgres (pid $pid) in $RUN/data" >&2
        return 1
      fi
    fi
  fi
  # A run leaves a gigabyte of per-suite databases; deleting it can take
  # minutes on a busy disk, so it is renamed now and removed in the background.
  if [[ -d ${RUN:?}/data ]]; then
    local doomed="$RUN/data.deleting.$$"
    if mv -- "$RUN/data" "$doomed" 2>/dev/null; then
      (rm -rf -- "$doomed" >/dev/null 2>&1 &)
    else
      rm -rf -- "$RUN/data"
    fi
  fi
  rm -f -- "$DIR/uri" "$DIR/port"
  if [[ $RUN != "$DIR" ]]; then
    # Keep the log beside DIR/uri's old place; drop the private runtime directory.
    if [[ -L $DIR/log && -f $RUN/log ]]; then
      cp --remove-destination -- "$RUN/log" "$DIR/log" 2>/dev/null || true
    fi
    (rm -rf -- "$RUN" >/dev/null 2>&1 &)  # in the background, as above
    rm -f -- "$DIR/runtime_dir"
    RUN=$DIR
  fi
  [[ -n $quiet ]] || echo "$PROG: $what"
}

# Prints a clear reason and the log's tail, tears down whatever was started, and exits non-zero.
fail_start() {
  trap - ERR
  {
    echo "$PROG: could not start PostgreSQL: $1; log ($LOG) follows:"
    if [[ -s ${LOG:-} ]]; then
      tail -n 60 -- "$LOG" | sed 's/^/    /'
    else
      echo "    (log is empty)"
    fi
  } >&2
  do_stop quiet >/dev/null 2>&1 || true
  exit 1
}

# A unix socket path holds at most 107 bytes; ".s.PGSQL.NNNNN" and a lock file go in the directory.
needs_private_runtime() {
  local dir=$1
  ((${#dir} + 20 > 100)) && return 0
  [[ $dir == *"'"* ]] && return 0  # would break the quoting in postgresql.conf
  if is_root; then
    as_pg test -w "$dir" -a -x "$dir" 2>/dev/null || return 0
  fi
  return 1
}

# make_tls OUT DATA: a CA (OUT/ca.pem) and a server key and certificate for DNS:localhost, signed
# by it, in DATA (owned by the server user, key mode 0600), and TLS on in DATA's configuration.
make_tls() {
  local out=$1 data=$2
  mkdir -p -- "$out"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=spool test CA" \
    -keyout "$out/ca.key" -out "$out/ca.pem" >>"$LOG" 2>&1 || fail_start "openssl: the CA"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout "$out/server.key" -out "$out/server.csr" >>"$LOG" 2>&1 || fail_start "openssl: the server key"
  printf 'subjectAltName = DNS:localhost\n' >"$out/san.ext"
  openssl x509 -req -in "$out/server.csr" -CA "$out/ca.pem" -CAkey "$out/ca.key" -CAcreateserial -days 2 \
    -extfile "$out/san.ext" -out "$out/server.crt" >>"$LOG" 2>&1 || fail_start "openssl: the server certificate"
  cp -- "$out/server.crt" "$out/server.key" "$data/"
  if is_root; then chown "$PG_USER:" "$data/server.crt" "$data/server.key"; fi
  chmod 0600 "$data/server.key"
  printf "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n" >>"$data/postgresql.conf"
}

do_start() {
  find_bindir
  if is_root; then ensure_pg_user; fi
  resolve_dir "$1" yes
  do_stop quiet  # a previous cluster in DIR goes first, running or not
  rm -f -- "$DIR/uri" "$DIR/port" "$DIR/log" "$DIR/runtime_dir"

  # Let spool-pg own DIR (it creates the socket and lock file there), or fall back to /tmp.
  if is_root; then
    chown "$PG_USER:" "$DIR" 2>/dev/null || true
  fi
  RUN=$DIR
  if needs_private_runtime "$DIR"; then
    RUN=$(mktemp -d "${TMPDIR:-/tmp}/spool-pg.XXXXXX")
    if needs_private_runtime "$RUN"; then
      rm -rf -- "$RUN"
      RUN=$(mktemp -d /tmp/spool-pg.XXXXXX)
    fi
    if is_root; then chown "$PG_USER:" "$RUN"; fi
    chmod 0755 "$RUN"
    echo "$RUN" >"$DIR/runtime_dir"
    ln -sfn -- "$RUN/log" "$DIR/log"
  fi
  LOG=$RUN/log
  : >"$LOG"
  if is_root; then chown "$PG_USER:" "$LOG"; fi
  trap 'fail_start "unexpected error at line $LINENO"' ERR

  echo "== initdb ($(date '+%F %T')) ==" >>"$LOG"
  as_pg "$BIN/initdb" -D "$RUN/data" -U postgres --auth=trust --no-sync --encoding=UTF8 --locale=C \
    --no-instructions >>"$LOG" 2>&1 ||
    fail_start "initdb failed"

  cat >>"$RUN/data/postgresql.conf" <<EOF

# ---- added by tests/support/pg_server.sh: a throwaway test cluster ----
listen_addresses = '127.0.0.1${SPOOL_PG_LISTEN:+,$SPOOL_PG_LISTEN}'
unix_socket_directories = '$RUN'
$(if [[ -n ${SPOOL_PG_DURABLE:-} ]]; then
    printf 'fsync = on\nsynchronous_commit = on\nfull_page_writes = on\nshared_buffers = 256MB\n'
  else
    printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nshared_buffers = 128MB\n'
  fi)
max_connections = 300
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
EOF
  if [[ -n ${SPOOL_PG_TLS:-} ]]; then make_tls "$DIR/tls" "$RUN/data"; fi
  # Clients on a test's own network (SPOOL_PG_LISTEN: an address of a veth the test made) trust
  # as local ones do.
  if [[ -n ${SPOOL_PG_LISTEN:-} ]]; then
    echo "host all all samenet trust" >>"$RUN/data/pg_hba.conf"
  fi

  # A free port from a range derived from our pid, so parallel starts (two build trees) spread out.
  # Another process can still grab it before the postmaster binds: then try the next one.
  # The range (20000-32767) ends below Linux's ephemeral ports (32768-60999): `restart` binds the
  # same port again, and in the moment it is free an outgoing connection of a parallel test must
  # not be able to take it as its local port.
  local attempt port="" started="" out=""
  for attempt in $(seq 0 29); do
    port=$((20000 + ($$ * 7 + attempt * 331) % 12768))
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

  # pg_ctl -w saw the postmaster ready; make sure a client gets through TCP with the written URI.
  local ok=""
  for _ in $(seq 1 60); do
    if "$BIN/pg_isready" -q -d "$uri" -t 2 >/dev/null 2>&1 &&
      [[ $("$BIN/psql" -X -A -t -q -d "$uri" -c 'SELECT 1' 2>/dev/null) == 1 ]]; then
      ok=yes
      break
    fi
    sleep 0.5
  done
  [[ -n $ok ]] || fail_start "the server started but $uri does not accept connections"
  trap - ERR
  echo "$PROG: PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') running at $uri (data $RUN/data, log $DIR/log)"
}

do_restart() {
  local mode=${2:-fast}
  [[ $mode == fast || $mode == immediate ]] || die "unknown restart mode '$mode': use fast or immediate"
  find_bindir
  resolve_dir "$1" no
  [[ -n $DIR && -s $DIR/port ]] || die "no server to restart in $1; start one: $0 start $1"
  local port
  port=$(<"$DIR/port")
  # -w waits until the new postmaster accepts connections (after crash recovery, for immediate).
  as_pg "$BIN/pg_ctl" -D "$RUN/data" -l "$RUN/log" -o "-p $port" -m "$mode" -w -t 60 restart >/dev/null ||
    die "could not restart PostgreSQL ($mode) in $RUN/data; see $DIR/log"
}

do_env() {
  resolve_dir "$1" no
  [[ -n $DIR && -s $DIR/uri ]] ||
    die "the PostgreSQL test server is not running in $1 (no uri file); start it: $0 start $1"
  printf 'export SPOOL_TEST_PG_URI=%q\n' "$(<"$DIR/uri")"
  printf 'export SPOOL_TEST_PG_DIR=%q\n' "$DIR"
}

# Sourced (tests/support/pg_replica.sh reuses the functions above): define, do not run.
[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0

# Two arguments; restart alone takes an optional third, its shutdown mode.
[[ ($# -eq 2 || ($# -eq 3 && $1 == restart)) && -n $2 ]] || usage
case $1 in
  start) do_start "$2" ;;
  stop)
    resolve_dir "$2" no
    do_stop
    ;;
  restart) do_restart "$2" "${3:-fast}" ;;
  env) do_env "$2" ;;
  *) usage ;;
esac
