// spool_ops_bench — throughput of the op queue (spool::ops::queue and
// spool::ops::worker_pool) on the engine a URI names. It prints one JSON line
// per result, carrying every parameter that shaped it, so runs on different
// machines and settings can be compared:
//
//   {"engine","workload","ops","payload_bytes","batch","workers","pool_size",
//    "heartbeat_ms","lease_ms","synchronous_commit"[,"fsync"],"ops_per_s","seconds"}
//
// Workloads (ops_queue is emptied before and after each, so every workload
// starts from the same table state and done_24h counts only its own ops):
//   enqueue_single  one thread calling enqueue() N times: one op per transaction;
//   enqueue_batch   one thread calling enqueue_batch() with 100 ops per call;
//   drain_direct    a preloaded backlog of N (not timed) drained by `workers`
//                   threads (1, 4 and 16), each looping dequeue + ack until
//                   nothing is ready;
//   drain_pool      the same backlog drained by a worker_pool with `workers`
//                   workers (1, 4 and 16) and a handler that does nothing,
//                   timed from start() until the pool has acked every op.
// Ids are left empty (Spool draws them from the OS CSPRNG, as for most
// producers, so that cost is measured) and dedup keys are empty (no
// coalescing: the dedup index holds no key, and no op is merged away).
//
// Timings are reported, never asserted. Exit 1 only when a workload lost,
// duplicated or failed ops, or on a spool::error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"

namespace {

using namespace std::chrono_literals;
namespace ops = spool::ops;
using steady = std::chrono::steady_clock;

constexpr int max_workers = 16;
constexpr int enqueue_batch_size = 100;
constexpr const char* op_type = "bench";
// Pool settings, stated so the results can name them. The defaults (10 s
// heartbeats, 60 s leases) are what an application gets; a lease cannot lapse
// during the run because the pool heartbeats every running op.
constexpr std::chrono::milliseconds pool_heartbeat = 10s;
constexpr std::chrono::milliseconds pool_lease = 60s;

struct settings {
  std::string db;
  int ops = 10000;
  int payload_bytes = 256;
  bool quick = false;
};

struct context {
  spool::database db;
  settings s;
  std::size_t pool_size = 0;
  std::string engine;       // "postgres" | "sqlite"
  std::string synchronous;  // PG: SHOW synchronous_commit; SQLite: PRAGMA synchronous by name
  std::string fsync;        // PG only: a test cluster often runs with fsync=off, which changes everything
};

struct result {
  std::string workload;
  int batch = 1, workers = 1;
  double seconds = 0;
  bool pool = false;  // drain_pool: heartbeat and lease settings apply
};

void clear(context& c) { c.db.exec("DELETE FROM ops_queue"); }

void report(const context& c, const result& r) {
  nlohmann::ordered_json j = {
      {"engine", c.engine},
      {"workload", r.workload},
      {"ops", c.s.ops},
      {"payload_bytes", c.s.payload_bytes},
      {"batch", r.batch},
      {"workers", r.workers},
      {"pool_size", c.pool_size},
      {"heartbeat_ms", r.pool ? static_cast<long>(pool_heartbeat.count()) : 0L},
      {"lease_ms", r.pool ? static_cast<long>(pool_lease.count()) : 0L},
      {"synchronous_commit", c.synchronous},
  };
  if (!c.fsync.empty()) j["fsync"] = c.fsync;
  j["ops_per_s"] = std::round(c.s.ops / r.seconds * 10) / 10;
  j["seconds"] = std::round(r.seconds * 1000) / 1000;
  fmt::print("{}\n", j.dump());
  std::fflush(stdout);
}

// The op every workload enqueues: type "bench", a payload {"pad":"xx…"} whose
// serialised form is payload_bytes long (or as short as {"pad":""} allows),
// no id and no dedup key.
ops::new_op make_op(int payload_bytes) {
  constexpr int overhead = 10;  // {"pad":""}
  ops::new_op o;
  o.type = op_type;
  o.payload = {{"pad", std::string(static_cast<std::size_t>(std::max(0, payload_bytes - overhead)), 'x')}};
  return o;
}

std::vector<std::vector<ops::new_op>> slice(int n, int batch, const ops::new_op& o) {
  std::vector<std::vector<ops::new_op>> batches;
  for (int done = 0; done < n; done += batch) {
    batches.emplace_back(static_cast<std::size_t>(std::min(batch, n - done)), o);
  }
  return batches;
}

// The table as a workload finds and leaves it: pending / done counts from
// stats() (one snapshot).
bool check_counts(context& c, ops::queue& q, const std::string& what, std::int64_t pending,
                  std::int64_t done) {
  const auto st = q.stats();
  const bool ok = st.pending == pending && st.done_24h == done && st.running == 0 && st.failed == 0;
  if (!ok) {
    fmt::print(stderr,
               "spool_ops_bench: {} on {}: pending {} (want {}), done {} (want {}), running {}, failed {}\n",
               what, c.engine, st.pending, pending, st.done_24h, done, st.running, st.failed);
  }
  return ok;
}

bool bench_enqueue(context& c, ops::queue& q, int batch) {
  const std::string workload = batch == 1 ? "enqueue_single" : "enqueue_batch";
  fmt::print(stderr, "spool_ops_bench: {} {} (batch {})\n", c.engine, workload, batch);
  clear(c);
  const auto o = make_op(c.s.payload_bytes);
  // Pre-build the batches so only enqueue / enqueue_batch (validation, id,
  // insert, commit) is timed.
  const auto batches = slice(c.s.ops, batch, o);
  const auto t0 = steady::now();
  if (batch == 1) {
    for (const auto& b : batches) (void)q.enqueue(b.front());
  } else {
    for (const auto& b : batches) (void)q.enqueue_batch(b);
  }
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
  const bool ok = check_counts(c, q, workload, c.s.ops, 0);
  report(c, {workload, batch, 1, seconds});
  clear(c);
  return ok;
}

// The backlog of a drain workload (not timed), then the statistics a table
// in service has: an unanalysed table may get a poor plan for the claim.
void preload(context& c, ops::queue& q) {
  clear(c);
  for (const auto& b : slice(c.s.ops, enqueue_batch_size, make_op(c.s.payload_bytes)))
    (void)q.enqueue_batch(b);
  if (c.db.kind() == spool::engine::postgres) c.db.exec("ANALYZE ops_queue");
}

bool bench_drain_direct(context& c, ops::queue& q, int workers) {
  fmt::print(stderr, "spool_ops_bench: {} drain_direct x{}\n", c.engine, workers);
  preload(c, q);
  const std::vector<std::string> types{op_type};  // as a pool claims: only the types it handles
  std::atomic<long> acked{0}, failures{0}, duplicates{0};
  std::mutex m;
  std::set<std::string> seen;
  // An ack that met a busy database (or whose reply was lost) is retried with the same token: a replay
  // of a recorded ack succeeds (op-queue.md §4.5), and an op left running
  // would otherwise end the drain short.
  auto ack = [&](const std::string& id, const std::string& token) {
    for (int attempt = 1;; ++attempt) {
      try {
        q.ack(id, token);
        return;
      } catch (const spool::error& e) {
        if ((!e.retryable() && e.code() != spool::errc::in_doubt) || attempt >= 100) throw;
        std::this_thread::sleep_for(10ms);
      }
    }
  };
  auto work = [&](int n) {
    const std::string owner = fmt::format("bench-{}", n);
    for (;;) {
      try {
        auto got = q.dequeue(types, owner);
        if (!got) {
          // An empty claim is also a lost race (dequeue's contract): stop only
          // when nothing is ready, so every thread drains to the end.
          if (!q.has_ready(types)) return;
          continue;
        }
        ack(got->id, got->lease_token.value_or(""));
        ++acked;
        std::lock_guard lock(m);
        if (!seen.insert(got->id).second) ++duplicates;
      } catch (const spool::error& e) {
        if (!e.retryable() || ++failures > 100) {
          fmt::print(stderr, "spool_ops_bench: drain_direct x{}: {}\n", workers, e.what());
          failures += 1000;
          return;
        }
        std::this_thread::sleep_for(10ms);  // busy/unavailable: nothing was claimed, try again
      }
    }
  };
  const auto t0 = steady::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(workers));
  for (int i = 0; i < workers; ++i) threads.emplace_back(work, i);
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();

  bool ok = acked == c.s.ops && duplicates == 0 && failures < 1000;
  if (!ok) {
    fmt::print(stderr, "spool_ops_bench: drain_direct x{}: acked {} of {}, {} duplicates\n", workers,
               acked.load(), c.s.ops, duplicates.load());
  }
  ok = check_counts(c, q, fmt::format("drain_direct x{}", workers), 0, c.s.ops) && ok;
  report(c, {"drain_direct", 1, workers, seconds});
  clear(c);
  return ok;
}

bool bench_drain_pool(context& c, ops::queue& q, int workers) {
  fmt::print(stderr, "spool_ops_bench: {} drain_pool x{}\n", c.engine, workers);
  preload(c, q);
  ops::worker_pool_options po;
  po.workers = workers;
  po.heartbeat_interval = pool_heartbeat;
  po.lease_timeout = pool_lease;
  ops::worker_pool pool(q, po);
  pool.add_handler(op_type, [](const ops::op&, ops::handler_context&) {});  // the pool's own cost only

  const auto done = [&] {
    const auto t = pool.metrics().total();
    return t.succeeded + t.failed + t.retried + t.released;
  };
  const auto t0 = steady::now();
  pool.start();
  // Poll the pool's in-memory counters (no database round trip that would
  // compete with the workers) every millisecond: that is the resolution of
  // the measurement. Give up when nothing moved for two minutes.
  auto last = done();
  auto last_progress = steady::now();
  bool stalled = false;
  while (last < static_cast<std::uint64_t>(c.s.ops)) {
    std::this_thread::sleep_for(1ms);
    const auto now_done = done();
    if (now_done != last) {
      last = now_done;
      last_progress = steady::now();
    } else if (steady::now() - last_progress > 120s) {
      stalled = true;
      break;
    }
  }
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
  (void)pool.stop();

  const auto t = pool.metrics().total();
  bool ok = !stalled && t.succeeded == static_cast<std::uint64_t>(c.s.ops) && t.failed == 0 &&
            t.retried == 0 && t.lease_lost == 0 && t.db_errors == 0;
  if (!ok) {
    fmt::print(stderr,
               "spool_ops_bench: drain_pool x{}: succeeded {} of {}, failed {}, retried {}, lease_lost {}, "
               "db_errors {}{}\n",
               workers, t.succeeded, c.s.ops, t.failed, t.retried, t.lease_lost, t.db_errors,
               stalled ? " (stalled)" : "");
  }
  ok = check_counts(c, q, fmt::format("drain_pool x{}", workers), 0, c.s.ops) && ok;
  report(c, {"drain_pool", 1, workers, seconds, true});
  clear(c);
  return ok;
}

int run(settings s) {
  if (s.quick) s.ops = std::min(s.ops, 200);
  spool::database_options dbo;
  // Every worker has its connection, plus the pool's heartbeater and rescuer.
  dbo.pool_size = max_workers + 2;
  dbo.sqlite_sync = spool::sqlite_synchronous::full;  // the default, stated: the results name it
  context c{spool::database::open(s.db, dbo), s, dbo.pool_size, {}, {}, {}};
  (void)spool::migrate(c.db);  // a fresh database gets ops_queue and its indexes, as `spool migrate` would
  const auto facts = spool::bench::describe(c.db);
  c.engine = facts.engine;
  c.synchronous = facts.synchronous;
  c.fsync = facts.fsync;
  ops::queue q(c.db);

  bool ok = true;
  for (int batch : {1, enqueue_batch_size}) ok = bench_enqueue(c, q, batch) && ok;
  // 1, 4 and 16 workers on both engines, SQLite included although it
  // serialises writers: the same rows on both engines can be compared, and
  // the 16-worker figure shows what lock contention costs there (the outbox
  // bench measures its 16 claimers on SQLite for the same reason).
  for (int workers : {1, 4, max_workers}) ok = bench_drain_direct(c, q, workers) && ok;
  for (int workers : {1, 4, max_workers}) ok = bench_drain_pool(c, q, workers) && ok;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  CLI::App app{"spool_ops_bench: spool::ops enqueue and drain throughput, one JSON line per result"};
  app.add_option("--db", s.db,
                 "database URI (postgresql://… or sqlite:PATH); the engine it names is measured")
      ->required();
  app.add_option("--ops", s.ops, "ops per workload")->capture_default_str()->check(CLI::Range(1, 100000000));
  app.add_option("--payload-bytes", s.payload_bytes,
                 "serialised payload size of each op (padded via a member)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 19));  // below the queue's 1 MiB max_payload_bytes
  app.add_flag("--quick", s.quick, "a smoke run: at most 200 ops per workload");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is not an error
  }

  try {
    return run(s);
  } catch (const spool::error& e) {
    fmt::print(stderr, "spool_ops_bench: {}/{}: {}\n", spool::to_string(e.code()), e.reason(), e.what());
    return 1;
  }
}
