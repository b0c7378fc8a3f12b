#!/usr/bin/env bash
# make_test.sh — what `make test` runs (and so CI, through .ci/run): every stage once, timed.
#
#   1. dependencies (scripts/install-deps.sh, then the test clients' npm packages: scripts/install-npm.sh)
#   2. the suites' build: everything (library, CLI, tests, examples, benchmarks) under
#      AddressSanitizer + UBSan in build-asan (SANITIZE=0: a plain build in build-all)
#   3. every suite in that tree, once — while the builds the later stages need run in the
#      background at the lowest CPU and I/O priority, on what the suites leave idle: the plain
#      main build (`make build`), the ThreadSanitizer build (TSAN=1) and the fuzz build (FUZZ=1)
#   4. the install test, on the plain main build
#   5. the runtime and concurrency suites under ThreadSanitizer (TSAN=0 skips)
#   6. each fuzz target for FUZZ_SECONDS, two at a time (FUZZ=0 skips)
# Then the time of each stage. The variables come from the Makefile (JOBS, SANITIZE, TSAN, FUZZ,
# FUZZ_SECONDS, the build directories). A failing stage stops the run, after its time is printed;
# the background builds' logs are in .stage-logs/.
set -uo pipefail
cd "$(dirname "$0")/.."

: "${JOBS:=2}" "${SANITIZE:=1}" "${TSAN:=1}" "${FUZZ:=1}" "${FUZZ_SECONDS:=20}"
: "${BUILD_DIR:=build}"
stages=$PWD/.stage-times.tsv
logs=$PWD/.stage-logs
rm -f -- "$stages"
rm -rf -- "$logs"
mkdir -p -- "$logs"

started=$(date +%s)
report() { scripts/timed.sh --report "$stages" "$(($(date +%s) - started))"; }
failed() {
  echo "make test: FAILED at: $1" >&2
  report
  exit 1
}
stage() {  # stage NAME COMMAND...: runs in the foreground, timed
  local name=$1
  shift
  scripts/timed.sh "$stages" "$name" "$@" || failed "$name"
}

# Background builds are chained (one at a time): together they would contend with each other
# as well as with the suites.
chain() {
  local targets=(build)
  [[ $TSAN == 1 ]] && targets+=(tsan-build)
  [[ $FUZZ == 1 ]] && targets+=(fuzz-build)
  local t
  for t in "${targets[@]}"; do
    nice -n 19 ionice -c 3 scripts/timed.sh "$stages" "$t (background)" make --no-print-directory "$t" \
      >"$logs/$t.log" 2>&1 || { echo "$t" >"$logs/failed"; return 1; }
  done
}

stage "dependencies" bash scripts/install-deps.sh
stage "npm packages (the test clients)" bash scripts/install-npm.sh
stage "suites build ($([[ $SANITIZE == 1 ]] && echo ASan+UBSan || echo plain), everything)" \
  make --no-print-directory suites-build

chain &
chain_pid=$!
trap 'kill "$chain_pid" 2>/dev/null' EXIT
# The suites' output is kept, so that a failure ends the run with a digest of what failed
# (scripts/failure_digest.sh): the tail is what a CI log shows first.
suites_log=$logs/suites.log
if ! scripts/timed.sh "$stages" "every suite, once" \
  bash -c 'make --no-print-directory suites 2>&1 | tee "$0"; exit "${PIPESTATUS[0]}"' "$suites_log"; then
  echo "make test: FAILED at: every suite, once" >&2
  report
  scripts/failure_digest.sh "$suites_log" >&2
  exit 1
fi
if ! wait "$chain_pid"; then
  what=$(cat "$logs/failed" 2>/dev/null || echo "?")
  tail -n 60 "$logs/$what.log" >&2
  failed "the background build $what (log: $logs/$what.log)"
fi
trap - EXIT

stage "install test (main build)" \
  ctest --test-dir "$BUILD_DIR" --output-on-failure -R '^install_consumer_project$'
[[ $TSAN == 1 ]] && stage "runtime suites (ThreadSanitizer)" make --no-print-directory tsan-suites
[[ $FUZZ == 1 ]] && stage "fuzz targets, $FUZZ_SECONDS s each" make --no-print-directory fuzz-run
report
