#!/usr/bin/env bash
# smoke_pg.sh PG_DIR DBNAME PROGRAM [ARGS…] — runs a bench program against a
# fresh database DBNAME on the test suite's PostgreSQL (the CTest fixture `pg`,
# whose URI tests/support/pg_server.sh wrote to PG_DIR/uri), then drops it.
# The bench empties Spool's tables, so it never shares a database with tests.
set -Eeuo pipefail
dir=$1 name=$2
shift 2
[[ -r $dir/uri ]] || { echo "smoke_pg.sh: no server URI in $dir/uri (is the pg fixture running?)" >&2; exit 1; }
admin=$(<"$dir/uri")
PSQL=psql
command -v psql >/dev/null 2>&1 || PSQL=/usr/lib/postgresql/15/bin/psql
"$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$admin" -c "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name"
trap '"$PSQL" -X -q -d "$admin" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
"$@" --db "${admin%/*}/$name"
