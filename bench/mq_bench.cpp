// spool_mq_bench — a first throughput benchmark of spool::mq on the engine a
// URI names. It prints one JSON line per result, carrying every parameter that
// shaped it, so runs on different machines and settings can be compared:
//
//   {"engine","workload","messages","payload_bytes","producer_batch","consumer_batch",
//    "workers","synchronous_commit","msgs_per_s","seconds"}
//
// Workloads (each on its own queue name, emptied before and after):
//   publish  one producer thread calling publish_batch(producer_batch) until N are in;
//   drain    a preloaded backlog of N emptied by `workers` threads, each looping
//            poll(consumer_batch) + ack_batch(receipts) until a poll comes back empty.
// Messages are ungrouped (each is its own group), so the gates never hold a
// message back and the numbers show the claim/ack machinery itself.
//
// Timings are reported, never asserted. Exit 1 only when a workload lost or
// double-acked messages, or on a spool::error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"

namespace {

using namespace std::chrono_literals;
namespace mq = spool::mq;
using steady = std::chrono::steady_clock;

struct settings {
  std::string db;
  int messages = 10000;
  int payload_bytes = 256;
  bool quick = false;
};

struct context {
  spool::database db;
  settings s;
  std::string engine;       // "postgres" | "sqlite"
  std::string synchronous;  // PG: SHOW synchronous_commit; SQLite: PRAGMA synchronous by name
  std::string fsync;        // PG only: a test cluster often runs with fsync=off, which changes everything
};

std::string dialect(spool::engine e, std::string sql) {
  if (e == spool::engine::sqlite) std::replace(sql.begin(), sql.end(), '$', '?');
  return sql;
}

void clear_queue(context& c, const std::string& queue) {
  for (const char* table : {"queue_messages", "queue_messages_failed"}) {
    c.db.exec(dialect(c.db.kind(), fmt::format("DELETE FROM {} WHERE queue_name = $1", table)), {queue});
  }
}

// N messages whose encoded payload is payload_bytes long (or as short as the
// fixed fields allow). The id is left empty, as most producers do: Spool
// assigns a UUIDv7 during publish, and that cost belongs in the measurement.
std::vector<mq::message> make_messages(int n, int payload_bytes) {
  mq::message m;
  m.pool_code = "bench";
  m.mediation_type = "HTTP";
  m.mediation_target = "https://bench.example.com/hook";
  mq::message sized = m;
  sized.id = std::string(36, '0');  // the length a UUIDv7 will have
  sized.extra.push_back({"pad", "\"\""});
  const long base = static_cast<long>(mq::encode(sized).size());
  const long pad = std::max(0L, payload_bytes - base);
  m.extra.push_back({"pad", "\"" + std::string(static_cast<std::size_t>(pad), 'x') + "\""});
  return std::vector<mq::message>(static_cast<std::size_t>(n), m);
}

mq::queue_options queue_opts(const std::string& name) {
  mq::queue_options o;
  o.name = name;
  o.visibility_timeout = 600s;  // no claim may lapse during a slow run: a lapse would re-deliver and skew counts
  return o;
}

void report(const context& c, const std::string& workload, int producer_batch, int consumer_batch, int workers,
            double seconds) {
  nlohmann::ordered_json j = {
      {"engine", c.engine},
      {"workload", workload},
      {"messages", c.s.messages},
      {"payload_bytes", c.s.payload_bytes},
      {"producer_batch", producer_batch},
      {"consumer_batch", consumer_batch},
      {"workers", workers},
      {"synchronous_commit", c.synchronous},
  };
  if (!c.fsync.empty()) j["fsync"] = c.fsync;
  j["msgs_per_s"] = std::round(c.s.messages / seconds * 10) / 10;
  j["seconds"] = std::round(seconds * 1000) / 1000;
  fmt::print("{}\n", j.dump());
  std::fflush(stdout);
}

void publish_in_batches(mq::queue& q, const std::vector<mq::message>& all, std::size_t batch) {
  for (std::size_t i = 0; i < all.size(); i += batch) {
    const auto end = std::min(all.size(), i + batch);
    (void)q.publish_batch(std::vector<mq::message>(all.begin() + static_cast<long>(i), all.begin() + static_cast<long>(end)));
  }
}

bool bench_publish(context& c, int batch) {
  const std::string name = fmt::format("bench_publish_b{}", batch);
  clear_queue(c, name);
  mq::queue q(c.db, queue_opts(name));
  const auto msgs = make_messages(c.s.messages, c.s.payload_bytes);
  // Pre-slice the batches so only publish_batch (encode, id, insert, commit) is timed.
  std::vector<std::vector<mq::message>> batches;
  for (std::size_t i = 0; i < msgs.size(); i += static_cast<std::size_t>(batch)) {
    const auto end = std::min(msgs.size(), i + static_cast<std::size_t>(batch));
    batches.emplace_back(msgs.begin() + static_cast<long>(i), msgs.begin() + static_cast<long>(end));
  }
  const auto t0 = steady::now();
  for (const auto& b : batches) (void)q.publish_batch(b);
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();

  const auto m = q.metrics();
  const bool ok = m.pending == c.s.messages;
  if (!ok) fmt::print(stderr, "spool_mq_bench: {}: expected {} pending rows, found {}\n", name, c.s.messages, m.pending);
  report(c, "publish", batch, 0, 1, seconds);
  clear_queue(c, name);
  return ok;
}

bool bench_drain(context& c, int batch, int workers) {
  const std::string name = fmt::format("bench_drain_b{}_w{}", batch, workers);
  clear_queue(c, name);
  mq::queue q(c.db, queue_opts(name));
  publish_in_batches(q, make_messages(c.s.messages, c.s.payload_bytes), 500);  // the backlog; not timed
  // A table that has never been analyzed gets a whole-queue hash anti-join
  // for poll(100) until autovacuum catches up (about a minute); a queue in
  // service has statistics, so measure that steady state.
  if (c.db.kind() == spool::engine::postgres) c.db.exec("ANALYZE queue_messages");

  std::atomic<long> acked{0}, not_found{0}, failures{0};
  auto consume = [&] {
    for (;;) {
      try {
        const auto got = q.poll(static_cast<std::size_t>(batch));
        if (got.empty()) return;  // nothing visible is left: the others hold the rest
        std::vector<std::string> receipts;
        receipts.reserve(got.size());
        for (const auto& d : got) receipts.push_back(d.receipt);
        for (auto st : q.ack_batch(receipts)) (st == mq::ack_status::acked ? acked : not_found)++;
      } catch (const spool::error& e) {
        if (!e.retryable() || ++failures > 100) {
          fmt::print(stderr, "spool_mq_bench: {}: {}\n", name, e.what());
          failures += 1000;
          return;
        }
        std::this_thread::sleep_for(10ms);  // busy/unavailable: nothing was done, try again
      }
    }
  };
  const auto t0 = steady::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) threads.emplace_back(consume);
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();

  const bool ok = acked == c.s.messages && not_found == 0 && failures < 1000;
  if (!ok) {
    fmt::print(stderr, "spool_mq_bench: {}: acked {} of {} ({} not_found)\n", name, acked.load(), c.s.messages,
               not_found.load());
  }
  report(c, "drain", 0, batch, workers, seconds);
  clear_queue(c, name);
  return ok;
}

int run(settings s) {
  if (s.quick) s.messages = std::min(s.messages, 200);
  spool::database_options dbo;
  dbo.sqlite_sync = spool::sqlite_synchronous::full;  // the default, stated: the results name it
  context c{spool::database::open(s.db, dbo), s, {}, {}, {}};
  spool::migrate(c.db);  // a fresh database gets the tables and the I5 indexes, as `spool migrate` would
  const auto facts = spool::bench::describe(c.db);
  c.engine = facts.engine;
  c.synchronous = facts.synchronous;
  c.fsync = facts.fsync;

  bool ok = true;
  for (int batch : {1, 100}) ok = bench_publish(c, batch) && ok;
  for (int batch : {1, 100}) {
    for (int workers : {1, 4}) ok = bench_drain(c, batch, workers) && ok;
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  CLI::App app{"spool_mq_bench: spool::mq publish and drain throughput, one JSON line per result"};
  app.add_option("--db", s.db, "database URI (postgresql://… or sqlite:PATH); the engine it names is measured")
      ->required();
  app.add_option("--messages", s.messages, "messages per workload")->capture_default_str()->check(CLI::Range(1, 100000000));
  app.add_option("--payload-bytes", s.payload_bytes, "encoded message size (padded via an extra member)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  app.add_flag("--quick", s.quick, "a smoke run: at most 200 messages per workload");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is not an error
  }


  try {
    return run(s);
  } catch (const spool::error& e) {
    fmt::print(stderr, "spool_mq_bench: {}/{}: {}\n", spool::to_string(e.code()), e.reason(), e.what());
    return 1;
  }
}
