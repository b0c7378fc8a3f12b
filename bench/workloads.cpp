// The named workloads (workloads.hpp): the loop that times every capability's
// driver (bench_driver.hpp) the same way and reports each result as one line.
#include "workloads.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "bench_driver.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/pg.hpp"

namespace spool::bench {
namespace {

using namespace std::chrono_literals;

// Resident set of this process in kB (Linux /proc), 0 where unknown.
long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto idx = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size()))) - 1;
  return sorted[std::min(idx, sorted.size() - 1)];
}

// v rounded to `decimals` places (divided, not multiplied, back so the JSON shows 12.3,
// not 12.300000000000001).
double round_to(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

struct runner {
  const options& o;
  const line_sink& out;
  const progress_sink& progress;
  engine_facts facts;
  bool ok = true;

  nlohmann::ordered_json line(driver& d, const std::string& workload, long messages, int producer_batch,
                              int consumer_batch, int workers, bool held) const {
    nlohmann::ordered_json j = {
        {"engine", facts.engine},
        {"capability", d.capability()},
        {"workload", workload},
        {"messages", messages},
        {"payload_bytes", o.payload_bytes},
        {"producer_batch", producer_batch},
        {"consumer_batch", consumer_batch},
        {"workers", workers},
        {"synchronous_commit", facts.synchronous},
        {"held_snapshot", held},
    };
    if (!facts.fsync.empty()) j["fsync"] = facts.fsync;
    if (const auto c = d.claim_concurrency()) j["claim_concurrency"] = *c;
    return j;
  }
  void emit(const nlohmann::ordered_json& j) const { out(j.dump()); }
  void fail(const std::string& what) {
    ok = false;
    progress(fmt::format("FAILED: {}", what));
  }

  // W1 / W2: one thread publishing `batch` messages per transaction until
  // `total` are in or max_seconds passed.
  void publish(driver& d, const std::string& workload, long total, int batch) {
    progress(fmt::format("{} {} {} (producer batch {}, up to {} messages)", facts.engine, d.capability(),
                         workload, batch, total));
    d.clear();
    const auto t0 = steady::now();
    const auto cap = std::chrono::duration<double>(o.max_seconds);
    long done = 0;
    while (done < total && steady::now() - t0 < cap) {
      const int k = static_cast<int>(std::min<long>(batch, total - done));
      d.publish(k);
      done += k;
    }
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    const auto waiting = d.waiting();
    if (waiting != done)
      fail(fmt::format("{} {}: published {}, {} waiting", d.capability(), workload, done, waiting));
    auto j = line(d, workload, done, batch, 0, 1, false);
    j["msgs_per_s"] = round_to(static_cast<double>(done) / seconds, 1);
    j["seconds"] = round_to(seconds, 3);
    j["complete"] = done == total;
    emit(j);
    d.clear();
  }

  // W3 (and held): `workers` threads looping claim(batch) + ack over a
  // preloaded backlog until it is empty or max_seconds passed.
  void drain(driver& d, int batch, int workers, bool held) {
    progress(fmt::format("{} {} W3 (consumer batch {}, {} workers, backlog {}{})", facts.engine,
                         d.capability(), batch, workers, o.backlog, held ? ", held snapshot" : ""));
    d.clear();
    d.preload(o.backlog);
    d.analyze();
    // The held session: its own connection, a REPEATABLE READ transaction
    // whose snapshot the SELECT takes, open until the drain ends. Rows the
    // drain deletes or updates stay visible to it, so nothing it touched can
    // be pruned or vacuumed during the run.
    std::optional<database> held_db;
    std::optional<pg::tx> held_tx;
    if (held) {
      database_options hdo;
      hdo.pool_size = 1;
      held_db.emplace(database::open(o.db, hdo));
      held_tx.emplace(*held_db);
      held_tx->exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
      held_tx->exec("SELECT count(*) FROM " + d.table());
    }
    std::atomic<long> claimed{0}, acked{0}, errors{0};
    std::atomic<bool> stop{false};
    std::atomic<int> running{workers};
    auto work = [&](int n) {
      int empty = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        try {
          const auto c = d.consume(batch, n);
          claimed += c.claimed;
          acked += c.acked;
          if (c.claimed == 0) {
            // Nothing claimable: the backlog is gone or the others hold the
            // rest (an op-queue claim can also lose a race). Look again a few
            // times before leaving, so no worker quits while rows remain.
            if (++empty >= 3) break;
            std::this_thread::sleep_for(1ms);
          } else {
            empty = 0;
          }
        } catch (const spool::error& e) {
          if (!e.retryable() || ++errors > 100) {
            progress(fmt::format("{} W3: {}", d.capability(), e.what()));
            errors += 1000;
            break;
          }
          std::this_thread::sleep_for(10ms);  // busy/unavailable: nothing was done, try again
        }
      }
      --running;
    };
    const auto t0 = steady::now();
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(workers));
    for (int i = 0; i < workers; ++i) threads.emplace_back(work, i);
    long peak_rss = 0;
    const auto cap = std::chrono::duration<double>(o.max_seconds);
    while (running.load() > 0) {
      peak_rss = std::max(peak_rss, rss_kb());
      if (steady::now() - t0 >= cap) stop = true;
      std::this_thread::sleep_for(20ms);
    }
    for (auto& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    if (held_tx) held_tx->rollback();

    const bool complete = !stop.load();
    const auto waiting = d.waiting();
    if (acked != claimed || errors >= 1000 || (complete && acked != o.backlog) ||
        waiting != o.backlog - acked) {
      fail(fmt::format("{} W3 batch {} x{}: claimed {}, acked {} of {}, {} still waiting, {} errors",
                       d.capability(), batch, workers, claimed.load(), acked.load(), o.backlog, waiting,
                       errors.load()));
    }
    auto j = line(d, "W3", acked, 0, batch, workers, held);
    j["backlog"] = o.backlog;
    j["msgs_per_s"] = round_to(static_cast<double>(acked) / seconds, 1);
    j["seconds"] = round_to(seconds, 3);
    j["complete"] = complete;
    j["rss_kb"] = peak_rss;
    emit(j);
    d.clear();
  }

  // runtime: the same backlog as W3, drained by the capability's runtime
  // with a no-op handler at the same width and claim size; the figure to set
  // beside the library loop's (W3) at the same concurrency.
  void drain_runtime(driver& d, int batch, int workers) {
    progress(fmt::format("{} {} runtime (claim {}, {} workers, backlog {})", facts.engine, d.capability(), batch,
                         workers, o.backlog));
    d.clear();
    d.preload(o.backlog);
    d.analyze();
    const auto t0 = steady::now();
    const std::string name = d.start_runtime(workers, batch);
    const auto cap = std::chrono::duration<double>(o.max_seconds);
    // The handler's count, not the table, while the runtime works: a
    // count(*) every 5 ms took a share of this 2-core machine's CPU from the
    // runtime it measured, which the library loop (W3) never paid. Then the
    // table, for the acks that follow the last handler calls.
    while (d.runtime_handled() < o.backlog && steady::now() - t0 < cap) std::this_thread::sleep_for(5ms);
    std::int64_t waiting = o.backlog;
    while ((waiting = d.waiting()) > 0 && steady::now() - t0 < cap) std::this_thread::sleep_for(1ms);
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    d.stop_runtime();
    const long done = o.backlog - static_cast<long>(waiting);
    auto j = line(d, "runtime", done, 0, batch, workers, false);
    j["runtime"] = name;
    j["backlog"] = o.backlog;
    j["msgs_per_s"] = round_to(static_cast<double>(done) / seconds, 1);
    j["seconds"] = round_to(seconds, 3);
    j["complete"] = waiting == 0;
    emit(j);
    d.clear();
  }

  // Backlog scaling: with `size` rows waiting, one worker runs claim(1) + ack
  // cycles; the cost per message is the mean cycle time.
  void backlog(driver& d, long size, long groups) {
    const long cycles = std::max(1L, std::min(o.backlog_cycles, size / 2));
    progress(fmt::format("{} {} backlog {} ({} cycles{})", facts.engine, d.capability(), size, cycles,
                         groups > 0 ? fmt::format(", {} groups", groups) : ""));
    (void)d.set_groups(groups);
    d.clear();
    const auto l0 = steady::now();
    d.preload(size);
    d.analyze();
    const double load_seconds = std::chrono::duration<double>(steady::now() - l0).count();
    long acked = 0;
    const auto t0 = steady::now();
    for (long i = 0; i < cycles; ++i) acked += d.consume(1, 0).acked;
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    if (acked != cycles)
      fail(fmt::format("{} backlog {}: acked {} of {} cycles", d.capability(), size, acked, cycles));
    auto j = line(d, "backlog", acked, 0, 1, 1, false);
    j["backlog"] = size;
    j["msgs_per_s"] = round_to(static_cast<double>(acked) / seconds, 1);
    j["us_per_msg"] = round_to(seconds * 1e6 / static_cast<double>(std::max(1L, acked)), 1);
    j["seconds"] = round_to(seconds, 3);
    j["load_seconds"] = round_to(load_seconds, 3);
    j["groups"] = groups;
    emit(j);
    (void)d.set_groups(0);
    d.clear();
  }

  // W4: a producer publishing one message per transaction at w4_rate for
  // w4_seconds while w4_consumers consumers with wake-ups on handle them;
  // latency from just before the publish call to the handler's start. The
  // first w4_warmup seconds at the same rate are not measured: each
  // connection prepares its statements on first use (10-20 ms a claim).
  void steady_rate(driver& d) {
    progress(fmt::format("{} {} W4 ({} msgs/s for {} s after {} s of warm-up, {} consumers)", facts.engine,
                         d.capability(), o.w4_rate, o.w4_seconds, o.w4_warmup, o.w4_consumers));
    d.clear();
    latency_log log;
    d.start_steady(o.w4_consumers, log);
    std::this_thread::sleep_for(200ms);  // consumers idle and listening before the first publish
    const auto period =
        std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1.0 / o.w4_rate));
    // Publishes n messages at the rate, then waits until all are handled.
    const auto phase = [&](long n) {
      const auto t0 = steady::now();
      for (long i = 0; i < n; ++i) {
        std::this_thread::sleep_until(t0 + i * period);
        d.publish_stamped(now_ns());
      }
      const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
      const auto deadline = steady::now() + 30s;
      while (log.size() < static_cast<std::size_t>(n) && steady::now() < deadline)
        std::this_thread::sleep_for(5ms);
      return seconds;
    };
    const auto warm = static_cast<long>(std::llround(o.w4_rate * o.w4_warmup));
    if (warm > 0) {
      (void)phase(warm);
      std::lock_guard lock(log.m);
      log.ms.clear();
    }
    const auto total = static_cast<long>(std::llround(o.w4_rate * o.w4_seconds));
    const double seconds = phase(total);
    const long peak_rss = rss_kb();
    d.stop_steady();
    std::vector<double> ms;
    {
      std::lock_guard lock(log.m);
      ms = log.ms;
    }
    std::sort(ms.begin(), ms.end());
    if (static_cast<long>(ms.size()) != total) {
      fail(fmt::format("{} W4: handled {} of {}", d.capability(), ms.size(), total));
    }
    auto j = line(d, "W4", static_cast<long>(ms.size()), 1, 1, o.w4_consumers, false);
    j["target_msgs_per_s"] = o.w4_rate;
    j["warmup_seconds"] = o.w4_warmup;
    j["wakeups"] = d.pg() ? "notify" : "in-process";
    j["msgs_per_s"] = round_to(static_cast<double>(total) / seconds, 1);
    j["p50_ms"] = round_to(percentile(ms, 0.50), 3);
    j["p95_ms"] = round_to(percentile(ms, 0.95), 3);
    j["p99_ms"] = round_to(percentile(ms, 0.99), 3);
    j["max_ms"] = round_to(ms.empty() ? 0 : ms.back(), 3);
    j["seconds"] = round_to(seconds, 3);
    j["rss_kb"] = peak_rss;
    emit(j);
    d.clear();
  }
};

bool selected(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

void check_names(const std::vector<std::string>& given, const std::vector<std::string>& known,
                 const char* what) {
  for (const auto& g : given) {
    if (!selected(known, g)) {
      throw error(errc::invalid_argument,
                  fmt::format("unknown {} '{}' (expected one of {})", what, g, fmt::join(known, ", ")));
    }
  }
}

}  // namespace

options quick(options o) {
  o.w1_messages = std::min(o.w1_messages, 200L);
  o.w2_messages = std::min(o.w2_messages, 1000L);
  o.backlog = std::min(o.backlog, 200L);
  o.backlog_sizes = {100, 1000};
  o.backlog_groups = {0, 10};
  o.backlog_cycles = std::min(o.backlog_cycles, 50L);
  o.w4_rate = std::min(o.w4_rate, 100.0);
  o.w4_seconds = std::min(o.w4_seconds, 1.0);
  o.w4_warmup = std::min(o.w4_warmup, 0.2);
  o.max_seconds = std::min(o.max_seconds, 20.0);
  return o;
}

bool run(const options& o, const line_sink& out, const progress_sink& progress) {
  check_names(o.capabilities, {"mq", "ops", "outbox"}, "capability");
  check_names(o.workloads, {"W1", "W2", "W3", "W4", "backlog", "held", "runtime"}, "workload");
  for (int w : o.workers) {
    if (w < 1 || w > max_workers) {
      throw error(errc::invalid_argument, fmt::format("workers {} is outside 1..{}", w, max_workers));
    }
  }
  database_options dbo;
  dbo.pool_size = max_workers + 4;  // every worker its connection, plus pools' heartbeaters and rescuers
  const std::vector<std::string> sync_names{"off", "normal", "full", "extra"};
  check_names({o.sqlite_synchronous}, sync_names, "SQLite synchronous level");
  dbo.sqlite_sync = static_cast<sqlite_synchronous>(
      std::find(sync_names.begin(), sync_names.end(), o.sqlite_synchronous) - sync_names.begin());
  auto db = database::open(o.db, dbo);
  (void)spool::migrate(db);
  runner r{o, out, progress, describe(db)};

  for (const auto& cap : o.capabilities) {
    std::unique_ptr<driver> d;
    if (cap == "mq") d = make_mq_driver(db, o.payload_bytes, o.claim_concurrency);
    if (cap == "ops") d = make_ops_driver(db, o.payload_bytes, o.claim_concurrency);
    if (cap == "outbox") d = make_outbox_driver(db, o.payload_bytes);
    if (const auto foreign = d->foreign_rows(); foreign > 0) {
      throw error(
          errc::invalid_argument,
          fmt::format("{} holds {} rows the bench did not write; the bench empties its tables, so run it "
                      "on a scratch database",
                      d->table(), foreign));
    }
    if (selected(o.workloads, "W1")) r.publish(*d, "W1", o.w1_messages, 1);
    if (selected(o.workloads, "W2")) r.publish(*d, "W2", o.w2_messages, 100);
    if (selected(o.workloads, "W3")) {
      for (int batch : o.consumer_batches) {
        if (!d->supports_batch(batch)) {
          progress(fmt::format("{} W3: no batch claim of {} in this capability; skipped", cap, batch));
          continue;
        }
        for (int workers : o.workers) r.drain(*d, batch, workers, false);
      }
    }
    if (selected(o.workloads, "runtime")) {
      for (int batch : o.consumer_batches) {
        for (int workers : o.workers) r.drain_runtime(*d, batch, workers);
      }
    }
    if (selected(o.workloads, "held")) {
      if (d->pg()) {
        const int batch = d->supports_batch(100) ? 100 : 1;
        if (!selected(o.workloads, "W3")) r.drain(*d, batch, 4, false);  // the clean run beside it
        r.drain(*d, batch, 4, true);
      } else {
        progress(fmt::format("{} held: PostgreSQL only; skipped on SQLite", cap));
      }
    }
    if (selected(o.workloads, "backlog")) {
      for (long groups : o.backlog_groups) {
        if (!d->set_groups(groups)) continue;  // groups are an mq notion
        for (long size : o.backlog_sizes) r.backlog(*d, size, groups);
      }
    }
    if (selected(o.workloads, "W4")) r.steady_rate(*d);
  }
  return r.ok;
}

}  // namespace spool::bench
