#!/usr/bin/env bash
# failure_digest.sh LOG — the lines of a failed suite run that say what failed, for the end of
# the output: a CI log is often read from its tail only, and a failing test's own output can be
# long (the eight racing relays) or cut. Prints, in log order and at most 60 lines:
#   ctest's failed tests; every GoogleTest failure with up to 6 lines after it; the failed test
#   names; uncaught exceptions; sanitizer reports; a support script's `die` lines.
set -uo pipefail
log=${1:?usage: failure_digest.sh LOG}
[[ -r $log ]] || { echo "failure_digest: cannot read $log" >&2; exit 1; }
echo "==== what failed (scripts/failure_digest.sh $log) ===="
awk '
  /\*\*\*(Failed|Timeout|Exception)|Subprocess aborted|\(Failed\)|\(Timeout\)/ { print; next }
  /: Failure$/ { print; after = 6; next }
  after > 0 && /^\[/ { after = 0 }
  after > 0 { print; after--; next }
  /^\[  FAILED  \]/ && !seen[$0]++ { print; next }
  /C\+\+ exception with description|terminate called|what\(\):/ { print; next }
  /(ERROR|WARNING): (Address|Leak|Thread|UndefinedBehavior)Sanitizer|runtime error:|^SUMMARY: / { print; next }
  /\.sh: (error|die|could not|the promoted)/ { print; next }
' "$log" | head -n 60
echo "==== end of what failed ===="
