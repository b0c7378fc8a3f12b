// spool_outbox_bench — throughput of spool::outbox (writer and store) on the
// engine a URI names. It prints one JSON line per result, carrying every
// parameter that shaped it, so runs on different machines and settings can be
// compared:
//
//   {"engine","workload","messages","payload_bytes","tx_batch","claimers","claim_batch",
//    "serialization","lease_ms","pool_size","synchronous_commit"[,"fsync"],"msgs_per_s","seconds"}
//
// Workloads (the outbox table is emptied before and after each):
//   insert   one thread writing N envelopes through outbox::writer, tx_batch
//            envelopes per caller transaction (insert_batch, then commit), with
//            tx_batch 1 and 100. Ids are UUIDv7s from envelope_builder, as an
//            application would make them; building them is timed too.
//   deliver  a preloaded backlog of N (not timed) drained by `claimers` threads
//            (1, 4 and 16), each looping claim(claim_batch) + one mark_delivered
//            per claimed row until a claim comes back empty.
// Envelopes carry no ordering key and claims use serialization none, so the
// numbers show the lease machinery itself.
//
// Timings are reported, never asserted. Exit 1 only when a workload lost,
// duplicated or failed to deliver envelopes, or on a spool::error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/outbox/envelope.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace {

using namespace std::chrono_literals;
namespace ob = spool::outbox;
using steady = std::chrono::steady_clock;

constexpr int max_claimers = 16;
constexpr auto lease = 600s;  // no lease may lapse during a slow run: a reclaim would skew counts

struct settings {
  std::string db;
  int messages = 10000;
  int payload_bytes = 256;
  int claim_batch = 16;
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
  int tx_batch = 0, claimers = 0, claim_batch = 0;
  std::string serialization = "none";
  double seconds = 0;
};

void clear(context& c) { c.db.exec("DELETE FROM outbox_messages"); }

std::int64_t count(context& c, const std::string& where) {
  return std::stoll(c.db.exec("SELECT count(*) FROM outbox_messages WHERE " + where).at(0).at(0).value_or("0"));
}

void report(const context& c, const result& r) {
  nlohmann::ordered_json j = {
      {"engine", c.engine},
      {"workload", r.workload},
      {"messages", c.s.messages},
      {"payload_bytes", c.s.payload_bytes},
      {"tx_batch", r.tx_batch},
      {"claimers", r.claimers},
      {"claim_batch", r.claim_batch},
      {"serialization", r.serialization},
      {"lease_ms", r.workload == "deliver" ? static_cast<long>(std::chrono::milliseconds(lease).count()) : 0L},
      {"pool_size", c.pool_size},
      {"synchronous_commit", c.synchronous},
  };
  if (!c.fsync.empty()) j["fsync"] = c.fsync;
  j["msgs_per_s"] = std::round(c.s.messages / r.seconds * 10) / 10;
  j["seconds"] = std::round(r.seconds * 1000) / 1000;
  fmt::print("{}\n", j.dump());
  std::fflush(stdout);
}

// Writes `n` envelopes in transactions of `tx_batch`, in the engine's own
// caller transaction, as an application would.
void write_envelopes(context& c, int n, int tx_batch) {
  // Options and params are filled by member (not designated initializers) so
  // -Wextra does not warn about every member left at its default.
  ob::writer_options wo;
  wo.max_batch_size = static_cast<std::size_t>(std::max(tx_batch, 1));
  ob::writer w(c.db, wo);
  const ob::envelope_builder builder;
  ob::envelope_params params;
  params.topic = "bench";
  params.payload = std::string(static_cast<std::size_t>(c.s.payload_bytes), 'x');
  for (int done = 0; done < n;) {
    const int k = std::min(tx_batch, n - done);
    std::vector<ob::envelope> batch;
    batch.reserve(static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) batch.push_back(builder.build(params));
    if (c.db.kind() == spool::engine::postgres) {
      spool::pg::tx tx(c.db);
      (void)w.insert_batch(tx, batch);
      tx.commit();
    } else {
      spool::sqlite::tx tx(c.db);
      (void)w.insert_batch(tx, batch);
      tx.commit();
    }
    done += k;
  }
}

bool bench_insert(context& c, int tx_batch) {
  clear(c);
  const auto t0 = steady::now();
  write_envelopes(c, c.s.messages, tx_batch);
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
  const auto pending = count(c, "state = 'pending'");
  const bool ok = pending == c.s.messages;
  if (!ok) fmt::print(stderr, "spool_outbox_bench: insert tx_batch {}: {} pending of {}\n", tx_batch, pending, c.s.messages);
  report(c, {"insert", tx_batch, 0, 0, "none", seconds});
  clear(c);
  return ok;
}

bool bench_deliver(context& c, ob::store& store, int claimers) {
  clear(c);
  write_envelopes(c, c.s.messages, 100);  // the backlog; not timed
  // A table in service has statistics; measure that steady state.
  if (c.db.kind() == spool::engine::postgres) c.db.exec("ANALYZE outbox_messages");

  std::atomic<long> delivered{0}, lost{0}, failures{0};
  std::mutex m;
  std::set<std::string> seen;
  std::atomic<long> duplicates{0};
  auto work = [&](int n) {
    const std::string owner = fmt::format("bench-{}", n);
    for (;;) {
      try {
        const auto got = store.claim(owner, static_cast<std::size_t>(c.s.claim_batch), lease);
        if (got.empty()) return;  // nothing claimable is left: the others hold the rest
        for (const auto& cm : got) {
          try {
            store.mark_delivered(cm.ref);
            ++delivered;
            std::lock_guard lock(m);
            if (!seen.insert(cm.message.id).second) ++duplicates;
          } catch (const spool::error& e) {
            if (e.code() == spool::errc::lease_lost) {
              ++lost;
            } else {
              throw;
            }
          }
        }
      } catch (const spool::error& e) {
        if (!e.retryable() || ++failures > 100) {
          fmt::print(stderr, "spool_outbox_bench: deliver x{}: {}\n", claimers, e.what());
          failures += 1000;
          return;
        }
        std::this_thread::sleep_for(10ms);  // busy/unavailable: nothing was done, try again
      }
    }
  };
  const auto t0 = steady::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < claimers; ++i) threads.emplace_back(work, i);
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();

  const auto stored = count(c, "state = 'delivered'");
  const bool ok = delivered == c.s.messages && stored == c.s.messages && lost == 0 && duplicates == 0 &&
                  failures < 1000;
  if (!ok) {
    fmt::print(stderr, "spool_outbox_bench: deliver x{}: delivered {} ({} stored) of {}, {} lease_lost, {} duplicates\n",
               claimers, delivered.load(), stored, c.s.messages, lost.load(), duplicates.load());
  }
  report(c, {"deliver", 0, claimers, c.s.claim_batch, "none", seconds});
  clear(c);
  return ok;
}

int run(settings s) {
  if (s.quick) s.messages = std::min(s.messages, 200);
  spool::database_options dbo;
  dbo.pool_size = max_claimers + 1;                   // every claimer has its connection
  dbo.sqlite_sync = spool::sqlite_synchronous::full;  // the default, stated: the results name it
  context c{spool::database::open(s.db, dbo), s, dbo.pool_size, {}, {}, {}};
  (void)ob::migrate(c.db);  // a fresh database gets the outbox tables, as `spool migrate` would
  const auto facts = spool::bench::describe(c.db);
  c.engine = facts.engine;
  c.synchronous = facts.synchronous;
  c.fsync = facts.fsync;

  bool ok = true;
  for (int tx_batch : {1, 100}) ok = bench_insert(c, tx_batch) && ok;
  ob::store_options so;
  so.max_lease_duration = lease;
  ob::store store(c.db, so);
  for (int claimers : {1, 4, max_claimers}) ok = bench_deliver(c, store, claimers) && ok;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  CLI::App app{"spool_outbox_bench: spool::outbox insert and claim+deliver throughput, one JSON line per result"};
  app.add_option("--db", s.db, "database URI (postgresql://… or sqlite:PATH); the engine it names is measured")
      ->required();
  app.add_option("--messages", s.messages, "envelopes per workload")->capture_default_str()->check(CLI::Range(1, 100000000));
  app.add_option("--payload-bytes", s.payload_bytes, "payload size of each envelope")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--claim-batch", s.claim_batch, "rows per claim in the deliver workload")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--quick", s.quick, "a smoke run: at most 200 envelopes per workload");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is not an error
  }

  try {
    return run(s);
  } catch (const spool::error& e) {
    fmt::print(stderr, "spool_outbox_bench: {}/{}: {}\n", spool::to_string(e.code()), e.reason(), e.what());
    return 1;
  }
}
