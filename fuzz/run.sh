#!/usr/bin/env bash
# fuzz/run.sh [build|run] [SECONDS] — builds the libFuzzer targets (clang, ASan + UBSan, SPOOL_FUZZ=ON) in
# build-fuzz and runs each for SECONDS (default 20) on a scratch copy of its committed seed corpus
# fuzz/corpus/<target>/, so the committed corpus never grows; `build` only builds, `run` only runs
# (an earlier `build`), neither does both. Targets run FUZZ_PARALLEL at a time (default 2, one per
# core; each is single-threaded). Fails on any crash, broken property, leak, timeout (10 s per input)
# or memory blow-up (2 GB); the reproducer is kept in build-fuzz/fuzz-run/<target>/ and its path printed.
# FUZZ_TARGETS="a b" runs only those; SPOOL_FUZZ_BUILD_DIR and JOBS (default 2) as usual.
set -euo pipefail

phase=both
if [[ ${1:-} == build || ${1:-} == run ]]; then
  phase=$1
  shift
fi
seconds=${1:-20}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SPOOL_FUZZ_BUILD_DIR:-$root/build-fuzz}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=1

if [[ $phase != run ]]; then
  # Build type "Fuzz": -O1 with line tables only (quicker to build than RelWithDebInfo, enough for
  # sanitizer stack traces) and without NDEBUG.
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" \
    -DSPOOL_FUZZ=ON \
    -DBUILD_SHARED_LIBS=OFF -DSPOOL_BUILD_TESTS=OFF -DSPOOL_BUILD_BENCH=OFF -DSPOOL_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$build" --target fuzz_targets -j"${JOBS:-2}"
fi
[[ $phase == build ]] && exit 0

if [[ -n ${FUZZ_TARGETS:-} ]]; then
  read -ra targets <<<"$FUZZ_TARGETS"
else
  targets=()
  for dir in "$root"/fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi

# One target: its verdict on stdout, its failure report on stderr; returns non-zero on a finding.
fuzz_one() {
  local t=$1 work=$build/fuzz-run/$1
  rm -rf "$work"
  mkdir -p "$work/corpus"
  cp "$root/fuzz/corpus/$t/"* "$work/corpus/"
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1; then
    echo "fuzz: $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$') runs in ${seconds}s, no finding"
  else
    {
      tail -n 40 "$work/log"
      echo "fuzz: $t: FAILED; reproducer: $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | head -1)"
      echo "      replay: $build/fuzz/fuzz_$t <file>; full log: $work/log"
    } >&2
    return 1
  fi
}

parallel=${FUZZ_PARALLEL:-2}
failed=()
pids=()
names=()
collect() {  # waits for the oldest running target
  if ! wait "${pids[0]}"; then failed+=("${names[0]}"); fi
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
}
for t in "${targets[@]}"; do
  ((${#pids[@]} < parallel)) || collect
  fuzz_one "$t" &
  pids+=($!)
  names+=("$t")
done
while ((${#pids[@]} > 0)); do collect; done
((${#failed[@]} == 0)) || { echo "fuzz: failed: ${failed[*]}" >&2; exit 1; }
