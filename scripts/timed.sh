#!/usr/bin/env bash
# timed.sh FILE NAME COMMAND... — runs COMMAND and appends "NAME<TAB>seconds<TAB>status" to FILE.
# timed.sh --report FILE — prints the stages recorded in FILE as a table with their total.
# make test records each of its stages this way and prints the table at the end (also on failure).
set -uo pipefail

if [[ ${1:-} == --report ]]; then
  file=$2
  [[ -s $file ]] || exit 0
  echo
  echo "make test: stage times"
  awk -F'\t' '{ printf "  %-34s %3d min %02d s  %s\n", $1, $2 / 60, $2 % 60, $3; total += $2 }
              END { printf "  %-34s %3d min %02d s\n", "total", total / 60, total % 60 }' "$file"
  exit 0
fi

file=$1 name=$2
shift 2
start=$(date +%s)
"$@"
status=$?
printf '%s\t%d\t%s\n' "$name" "$(($(date +%s) - start))" "$([[ $status -eq 0 ]] && echo ok || echo "FAILED ($status)")" >>"$file"
exit "$status"
