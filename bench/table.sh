#!/usr/bin/env bash
# bench/table.sh RESULTS.jsonl — the Markdown tables of docs/BENCHMARKS.md from
# the JSON lines of bench/run.sh (needs jq): every Spool result with its floors
# and ratios (PostgreSQL: the floor of the same cycle first — at-least-once
# for mq, lease-and-keep for ops and outbox — then, for ops and outbox, the
# same cycle on their own table layout (every capability's publish too), then the one-commit or insert
# floor), then the runtimes beside the library loop, the backlog
# growth and held-snapshot lines.
set -Eeuo pipefail
IN=${1:?usage: bench/table.sh RESULTS.jsonl}

echo "| engine | sync | capability | workload | backlog | producer batch | consumer batch | workers | held snapshot | messages | msgs/s | µs/msg | p50 / p95 / p99 ms | same-cycle floor | ratio | same cycle, own table layout | ratio | one-commit / insert floor | ratio |"
echo "|---|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"
jq -r -s '
  (map(select(.kind == "ratio"))) as $ratios
  | map(select(.kind == null))[]
  | . as $l
  | select(.workload != "runtime")
  | ($ratios | map(select(.capability == $l.capability and .workload == $l.workload and .engine == $l.engine
                          and .backlog == $l.backlog and (.consumer_batch // 0) == ($l.consumer_batch // 0)
                          and .workers == $l.workers and .held_snapshot == $l.held_snapshot
                          and (.groups // 0) == ($l.groups // 0)))) as $rs
  | ($rs | map(select(.floor == "floor_alo" or .floor == "floor_kept")) | first) as $a
  | ($rs | map(select(.floor | endswith("_layout"))) | first) as $o
  | ($rs | map(select(.floor == "floor_claim" or .floor == "floor_insert")) | first) as $r
  | [ .engine, .synchronous_commit, .capability,
      .workload + (if (.groups // 0) > 0 then " (\(.groups) groups)" else "" end), (.backlog // "" | tostring), (if .producer_batch > 0 then .producer_batch else "" end | tostring),
      (if .consumer_batch > 0 then .consumer_batch else "" end | tostring), (.workers | tostring),
      (if .held_snapshot then "yes" else "no" end), (.messages | tostring)
        + (if .complete == false then " (time cap)" else "" end),
      (.msgs_per_s | tostring), (.us_per_msg // "" | tostring),
      (if .p99_ms then "\(.p50_ms) / \(.p95_ms) / \(.p99_ms)" else "" end),
      ($a.floor_msgs_per_s // "" | tostring), ($a.ratio // "" | tostring),
      ($o.floor_msgs_per_s // "" | tostring), ($o.ratio // "" | tostring),
      ($r.floor_msgs_per_s // "" | tostring), ($r.ratio // "" | tostring) ]
  | "| " + join(" | ") + " |"
' "$IN"

echo
echo "| floor (pgbench) | batch | clients | backlog | held snapshot | messages | msgs/s |"
echo "|---|---:|---:|---:|---|---:|---:|"
jq -r 'select(.kind == "floor") | "| \(.workload) | \(.batch) | \(.clients) | \(.backlog) | \(if .held_snapshot then "yes" else "no" end) | \(.messages) | \(.msgs_per_s) |"' "$IN"

echo
echo "| runtime vs library loop | capability | runtime | workers | claim | runtime msgs/s | loop (W3) msgs/s | runtime ÷ loop |"
echo "|---|---|---|---:|---:|---:|---:|---:|"
jq -r 'select(.kind == "runtime_vs_loop") | "| \(.engine) | \(.capability) | \(.runtime) | \(.workers) | \(.consumer_batch) | \(.runtime_msgs_per_s) | \(.loop_msgs_per_s) | \(.ratio) |"' "$IN"

echo
echo "| backlog growth | capability | groups | µs/msg at \`small\` | µs/msg at \`large\` | large ÷ small |"
echo "|---|---|---:|---:|---:|---:|"
jq -r 'select(.kind == "backlog_growth") | "| \(.engine) | \(.capability) | \(if (.groups // 0) == 0 then "none" else .groups end) | \(.small_us_per_msg) (\(.small_backlog)) | \(.large_us_per_msg) (\(.large_backlog)) | \(.growth) |"' "$IN"

echo
echo "| held snapshot vs clean (W3, 4 workers) | capability | consumer batch | clean msgs/s | held msgs/s | held ÷ clean |"
echo "|---|---|---:|---:|---:|---:|"
jq -r 'select(.kind == "held_vs_clean") | "| \(.engine) | \(.capability) | \(.consumer_batch) | \(.clean_msgs_per_s) | \(.held_msgs_per_s) | \(.ratio) |"' "$IN"
