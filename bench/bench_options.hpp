// The command-line options of the benchmark workloads, shared by `spool bench`
// (cli/cmd_bench.cpp) and the spool_*_bench programs (bench_main.hpp), so both
// spell every option the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "workloads.hpp"

namespace spool::bench {

// What the options set besides options itself.
struct cli_flags {
  bool quick = false;
  long messages = 0;  // 0: the defaults (W1 10,000, W2 100,000)
};

// Adds the workload options to app. --db is left to the caller (the CLI
// pre-scans it); --capability only when with_capability (the programs
// measure one capability each).
inline void add_options(CLI::App& app, options& o, cli_flags& f, bool with_capability) {
  if (with_capability) {
    app.add_option("--capability", o.capabilities, "capabilities, comma-separated: mq, ops, outbox")
        ->delimiter(',')
        ->capture_default_str();
  }
  app.add_option("--workload", o.workloads, "workloads, comma-separated: W1, W2, W3, W4, backlog, held, runtime")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--messages", f.messages, "messages published by W1 and W2 (default 10,000 and 100,000)")
      ->check(CLI::Range(1L, 100000000L));
  app.add_option("--backlog", o.backlog, "W3 and held: the preloaded backlog")
      ->capture_default_str()
      ->check(CLI::Range(1L, 100000000L));
  app.add_option("--workers", o.workers, "W3: worker counts, comma-separated (1..16)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--consumer-batch", o.consumer_batches, "W3: claim sizes, comma-separated (1 or 100)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--backlog-sizes", o.backlog_sizes, "backlog: rows waiting, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--backlog-groups", o.backlog_groups,
                 "backlog (mq): message groups of the rows, comma-separated (0 ungrouped, 1 one giant group)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--backlog-cycles", o.backlog_cycles, "backlog: claim + ack cycles measured per size")
      ->capture_default_str()
      ->check(CLI::Range(1L, 10000000L));
  app.add_option("--payload-bytes", o.payload_bytes, "encoded size of each message's payload")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 19));
  app.add_option("--claim-concurrency", o.claim_concurrency,
                 "mq and ops: claims of 32 or more running at once per queue handle "
                 "(queue_options::claim_concurrency; "
                 "0: no limit; -1: the library's default)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1024));
  app.add_option("--w4-rate", o.w4_rate, "W4: messages per second")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e5));
  app.add_option("--w4-seconds", o.w4_seconds, "W4: publishing time")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--w4-warmup", o.w4_warmup,
                 "W4: seconds of publishing at the rate before the measured time, not measured "
                 "(the runtimes' first calls prepare their statements on each connection)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--max-seconds", o.max_seconds, "a W1, W2 or W3 phase stops after this long")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--sqlite-synchronous", o.sqlite_synchronous,
                 "SQLite: PRAGMA synchronous (off, normal, full, extra)")
      ->capture_default_str()
      ->check(CLI::IsMember({"off", "normal", "full", "extra"}));
  app.add_flag("--quick", f.quick, "a smoke run: a few hundred messages per workload, every workload");
}

// The options after parsing: --messages and --quick applied.
[[nodiscard]] inline options finish(options o, const cli_flags& f) {
  if (f.messages > 0) o.w1_messages = o.w2_messages = f.messages;
  return f.quick ? quick(o) : o;
}

}  // namespace spool::bench
