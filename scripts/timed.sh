#!/usr/bin/env bash
# timed.sh FILE NAME COMMAND... — runs COMMAND and appends "NAME<TAB>seconds<TAB>status" to FILE.
# timed.sh --report FILE [WALL] — prints the stages recorded in FILE as a table; WALL (seconds) is
# the whole run's wall-clock time (background stages overlap the others, so it is less than the sum).
# make test records each of its stages this way and prints the table at the end (also on failure).
set -uo pipefail

if [[ ${1:-} == --report ]]; then
  file=$2 wall=${3:-}
  [[ -s $file ]] || exit 0
  echo
  echo "make test: stage times"
  awk -F'\t' -v wall="$wall" '{ printf "  %-46s %3d min %02d s  %s\n", $1, $2 / 60, $2 % 60, $3 }
              END { if (wall != "") printf "  %-46s %3d min %02d s\n", "wall clock (background stages overlap)", wall / 60, wall % 60 }' "$file"
  exit 0
fi

file=$1 name=$2
shift 2
start=$(date +%s)
"$@"
status=$?
printf '%s\t%d\t%s\n' "$name" "$(($(date +%s) - start))" "$([[ $status -eq 0 ]] && echo ok || echo "FAILED ($status)")" >>"$file"
exit "$status"
