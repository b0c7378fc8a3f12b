// spool::bench — the named benchmark workloads of issue 6 (docs/BENCHMARKS.md),
// shared by `spool bench` (cli/cmd_bench.cpp) and the spool_*_bench programs
// that bench/run.sh and the smoke tests run. Every result is one JSON line
// carrying every parameter that shaped it.
//
// Workloads, for each capability (mq: publish / poll + ack; ops: enqueue /
// dequeue + ack; outbox: writer insert / claim + mark_delivered):
//   W1       publish, one message per transaction;
//   W2       publish in batches of 100 per transaction;
//   W3       drain a preloaded backlog with 1, 4 and 16 workers and consumer
//            batches 1 and 100 (claim and ack);
//   W4       a steady publish rate (500 msgs/s) with 4 consumers and wake-ups
//            on (NOTIFY on PostgreSQL): publish-to-handler latency p50/p95/p99;
//   backlog  the per-message cost of claim + ack (batch 1, one worker) with
//            1k, 100k and 1M rows waiting;
//   held     the W3 drain (batch 100, 4 workers) while another session keeps a
//            REPEATABLE READ transaction (with its snapshot) open for the whole
//            run; PostgreSQL only; reported as W3 with held_snapshot true.
//   runtime  the W3 backlog drained by the capability's runtime (mq::consumer,
//            ops::worker_pool, outbox::relay) with a no-op handler, at each
//            worker count and claim size: beside W3's library loop.
//
// The bench empties Spool's tables between workloads: it refuses a database
// whose tables hold rows it did not write (see run()).
//
// Thread safety: run() may be called from one thread at a time per database;
// it starts and joins its own threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace spool::bench {

struct options {
  std::string db;  // database URI: postgresql://… or sqlite:PATH
  std::vector<std::string> capabilities{"mq", "ops", "outbox"};
  std::vector<std::string> workloads{"W1", "W2", "W3", "W4", "backlog", "held", "runtime"};
  long w1_messages = 10000;   // W1 messages (at most; see max_seconds)
  long w2_messages = 100000;  // W2 messages (at most; see max_seconds)
  long backlog = 100000;      // W3 and held: the preloaded backlog
  std::vector<int> workers{1, 4, 16};
  std::vector<int> consumer_batches{1, 100};
  std::vector<long> backlog_sizes{1000, 100000, 1000000};
  long backlog_cycles = 2000;  // claim + ack cycles measured per backlog size (at most half the backlog)
  // backlog, mq only: the rows' message groups, one run per entry: 0 =
  // ungrouped, N = spread round-robin over N groups (1 = one giant group).
  std::vector<long> backlog_groups{0, 1000, 1};
  int payload_bytes = 256;
  double w4_rate = 500;  // messages per second
  int w4_consumers = 4;
  double w4_seconds = 10;  // publishing time
  double w4_warmup = 1;    // publishing time before it, not measured (connects, first plans)
  // A timed phase (W1, W2, one W3 drain) stops after this long and reports
  // what it did; "complete" in its line says whether it finished.
  double max_seconds = 10;
  // SQLite's PRAGMA synchronous for the bench's connections: off, normal,
  // full (the library's default) or extra. Every line names it.
  std::string sqlite_synchronous = "full";
  // mq and ops: queue_options::claim_concurrency of the bench's queues (-1:
  // the library's default). Their lines name it.
  int claim_concurrency = -1;
};

// The smoke-run sizes: a few hundred messages per workload, backlogs of 100
// and 1,000, one second of W4 at 100 msgs/s. Every workload still runs.
[[nodiscard]] options quick(options o);

// Receives each result line (one JSON object, no newline) as it is made.
using line_sink = std::function<void(const std::string& json_line)>;
// Receives progress text for a human (stderr).
using progress_sink = std::function<void(const std::string& text)>;

// Runs the selected workloads on o.db for the selected capabilities, in the
// order W1, W2, W3, held, backlog, W4 per capability. Migrates the database
// first (as `spool migrate`). Returns true when every workload's counts
// checked out (nothing lost, nothing handled twice); timings are reported,
// never judged. Errors: invalid_argument (an unknown workload or capability,
// or a database whose Spool tables hold rows the bench did not write: it
// would empty them), and the library's errors.
bool run(const options& o, const line_sink& out, const progress_sink& progress);

}  // namespace spool::bench
