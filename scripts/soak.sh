#!/usr/bin/env bash
# soak.sh BUILD_DIR RUNS — the crash and fault suites (chaos_postgres, chaos_sqlite, chaos_many_hosts, faults_tests)
# RUNS times in a row in BUILD_DIR, each run with fresh random seeds (SPOOL_CHAOS_SEED is unset).
# Every run's full output goes to BUILD_DIR/soak/run-N.log; BUILD_DIR/soak/summary.txt gets one line
# per run with its verdict and the seed of each chaos and fault test (replay one with
# SPOOL_CHAOS_SEED=<seed> or SPOOL_TEST_FAULTS_SEED=<seed> and --gtest_filter=<test>); a failed chaos run's
# delivery logs and the shared test servers' logs are kept in BUILD_DIR/soak/kept-N. Exits non-zero unless every run was green. `make soak` runs it.
set -uo pipefail

build=${1:?usage: soak.sh BUILD_DIR RUNS}
runs=${2:?usage: soak.sh BUILD_DIR RUNS}
out=$build/soak
rm -rf -- "$out"
mkdir -p -- "$out"
summary=$out/summary.txt
unset SPOOL_CHAOS_SEED SPOOL_TEST_FAULTS_SEED

green=0
for ((i = 1; i <= runs; i++)); do
  log=$out/run-$i.log
  start=$(date +%s)
  # A chaos test that finds a fault copies its actors' delivery logs here, so
  # that the run can be examined after its temporary directory is gone.
  if SPOOL_CHAOS_KEEP_LOGS=$out/kept-$i \
    ctest --test-dir "$build" -V -j2 -R '^(chaos_postgres|chaos_sqlite|chaos_many_hosts|faults_tests)$' >"$log" 2>&1; then
    verdict=green
    green=$((green + 1))
  else
    verdict=RED
  fi
  seeds=$({
    grep -o 'chaos seed [0-9]* for [^ ]*' "$log" | awk '{ print $5 "=" $3 }'
    grep -o '\[faults\] [a-z_ ()]* seed [0-9]*' "$log" | sed -E 's/\[faults\] (.*) seed ([0-9]+)/faults:\1=\2/; s/ /_/g'
  } | sort | paste -sd' ' -)
  line="run $i/$runs: $verdict in $(($(date +%s) - start)) s; seeds: ${seeds:-none printed}"
  echo "$line" | tee -a "$summary"
  if [[ $verdict != green ]]; then
    grep -E 'Failure|FAILED|lost|violation' "$log" | head -20 | sed 's/^/    /' | tee -a "$summary"
    # The shared test servers' logs: the next run's start replaces them. A
    # backend that crashed makes the server restart every session and drop
    # commits not yet written (the test servers run synchronous_commit off).
    for server in pg pg-outbox; do
      # Only a log this run wrote: a server the run never started keeps an older one.
      if [[ -f $build/tests/$server/log && $(stat -c %Y "$build/tests/$server/log") -ge $start ]]; then
        mkdir -p -- "$out/kept-$i"
        cp -- "$build/tests/$server/log" "$out/kept-$i/$server.log"
        grep -E 'terminated by signal|PANIC|reinitializing|out of memory' "$build/tests/$server/log" |
          head -5 | sed "s/^/    $server server: /" | tee -a "$summary"
      fi
    done
  fi
done
echo "soak: $green of $runs runs green (logs in $out)" | tee -a "$summary"
((green == runs))
