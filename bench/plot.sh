#!/usr/bin/env bash
# bench/plot.sh RESULTS.jsonl [OUTDIR] — the plots of docs/BENCHMARKS.md from
# the JSON lines of bench/run.sh, with gnuplot (Debian: gnuplot-nox) and jq:
#   OUTDIR/w3_<engine>.png   W3 drain throughput vs workers, per capability and
#                            consumer batch (PostgreSQL: with the pgbench floor);
#   OUTDIR/backlog.png       claim + ack cost per message vs rows waiting.
# OUTDIR defaults to docs/bench. Not needed to run the benchmark itself.
set -Eeuo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
IN=${1:?usage: bench/plot.sh RESULTS.jsonl [OUTDIR]}
OUTDIR=${2:-$ROOT/docs/bench}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
command -v jq >/dev/null || { echo "plot.sh: jq not found" >&2; exit 1; }
mkdir -p "$OUTDIR"
DATA=$(mktemp -d "${TMPDIR:-/tmp}/spool-plot.XXXXXX")
trap 'rm -rf -- "$DATA"' EXIT

# series FILE JQ_FILTER: "x y" rows, sorted by x, from the lines the filter keeps.
series() { jq -r "$2" "$IN" | sort -n >"$DATA/$1"; }

for engine in postgres sqlite; do
  plots=()
  for cap in mq ops outbox; do
    for batch in 1 100; do
      f="$engine-$cap-b$batch"
      series "$f" "select(.kind == null and .engine == \"$engine\" and .capability == \"$cap\" and .workload == \"W3\"
                     and .consumer_batch == $batch and (.held_snapshot | not)) | \"\(.workers) \(.msgs_per_s)\""
      [[ -s $DATA/$f ]] && plots+=("'$DATA/$f' using 1:2 with linespoints title '$cap, batch $batch'")
    done
  done
  if [[ $engine == postgres ]]; then
    for batch in 1 100; do
      f="floor-b$batch"
      series "$f" "select(.kind == \"floor\" and .workload == \"floor_claim\" and .batch == $batch
                     and (.held_snapshot | not)) | \"\(.clients) \(.msgs_per_s)\""
      [[ -s $DATA/$f ]] && plots+=("'$DATA/$f' using 1:2 with linespoints dashtype 2 lw 2 title 'pgbench floor, batch $batch'")
    done
  fi
  ((${#plots[@]})) || continue
  joined=$(printf '%s, ' "${plots[@]}")
  gnuplot <<EOF
set terminal pngcairo size 900,560 font ",10"
set output '$OUTDIR/w3_$engine.png'
set title 'W3 drain of a preloaded backlog on $engine: throughput vs workers (claim + ack)'
set xlabel 'workers'
set ylabel 'messages per second'
set logscale y
set xtics (1, 4, 16)
set xrange [0.8:20]
set logscale x 2
set key outside right
set grid
plot ${joined%, }
EOF
done

plots=()
for engine in postgres sqlite; do
  for cap in mq ops outbox; do
    f="backlog-$engine-$cap"
    series "$f" "select(.kind == null and .engine == \"$engine\" and .capability == \"$cap\" and .workload == \"backlog\")
                   | \"\(.backlog) \(.us_per_msg)\""
    [[ -s $DATA/$f ]] && plots+=("'$DATA/$f' using 1:2 with linespoints title '$engine $cap'")
  done
done
if ((${#plots[@]})); then
  joined=$(printf '%s, ' "${plots[@]}")
  gnuplot <<EOF
set terminal pngcairo size 900,560 font ",10"
set output '$OUTDIR/backlog.png'
set title 'Cost per message (claim 1 + ack, one worker) vs rows waiting'
set xlabel 'rows waiting'
set ylabel 'microseconds per message'
set logscale x
set logscale y
set key outside right
set grid
plot ${joined%, }
EOF
fi
echo "plot.sh: plots in $OUTDIR" >&2
