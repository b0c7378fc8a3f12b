// The driver interface of the benchmark workloads (workloads.hpp): one driver
// per capability (mq_driver.cpp, ops_driver.cpp, outbox_driver.cpp) knows how
// to publish, preload, claim + ack and run steady consumers, so the workload
// loop (workloads.cpp) can time all three the same way.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spool/database.hpp"
#include "spool/sqlite.hpp"

namespace spool::bench {

using steady = std::chrono::steady_clock;

// The one queue name, op type and topic the bench writes; run() refuses a
// database holding any other rows in these tables, because it empties them.
inline constexpr const char* bench_name = "spool_bench";
// No claim may lapse in a slow run: a re-delivery would skew counts.
inline constexpr std::chrono::seconds long_claim{600};
inline constexpr int max_workers = 16;

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
}

// Latencies (ms) collected by handlers on many threads.
struct latency_log {
  std::mutex m;
  std::vector<double> ms;
  void add(std::int64_t stamp_ns) {
    const double v = static_cast<double>(now_ns() - stamp_ns) / 1e6;
    std::lock_guard lock(m);
    ms.push_back(v);
  }
  std::size_t size() {
    std::lock_guard lock(m);
    return ms.size();
  }
};

// What one claim + ack round did.
struct consumed {
  long claimed = 0;
  long acked = 0;
};

// A capability under test. Methods may be called from many threads at once
// where the library allows it (consume); the rest from the driving thread.
class driver {
 public:
  explicit driver(database db) : db_(std::move(db)) {}
  virtual ~driver() = default;
  driver(const driver&) = delete;
  driver& operator=(const driver&) = delete;

  [[nodiscard]] virtual std::string capability() const = 0;
  // mq and ops: their queues' claim_concurrency; empty for the outbox.
  [[nodiscard]] virtual std::optional<std::size_t> claim_concurrency() const { return std::nullopt; }
  [[nodiscard]] virtual std::string table() const = 0;
  // Rows in the bench's tables that the bench did not write.
  [[nodiscard]] virtual std::int64_t foreign_rows() = 0;
  // Empties the bench's tables (TRUNCATE on PostgreSQL: no dead rows carry over).
  virtual void clear() = 0;
  // n messages in one transaction, through the library's call for it.
  virtual void publish(int n) = 0;
  // n messages waiting, in the row format the library writes; not timed.
  virtual void preload(long n) = 0;
  // Later preloads spread their rows over `groups` message groups (0:
  // none); false when the capability has no groups (only mq has).
  virtual bool set_groups(long groups) { return groups == 0; }
  // Rows still waiting to be consumed.
  [[nodiscard]] virtual std::int64_t waiting() = 0;
  // One claim of up to batch messages and their acks, as worker `worker`.
  virtual consumed consume(int batch, int worker) = 0;
  // Whether a claim of `batch` exists (1 and 100 in every capability).
  [[nodiscard]] virtual bool supports_batch(int batch) const { return batch == 1 || batch == 100; }
  // W4: `consumers` consumers with wake-ups on; publish(stamp) is called by
  // the workload at the target rate; every handled message's stamp goes to log.
  virtual void start_steady(int consumers, latency_log& log) = 0;
  virtual void publish_stamped(std::int64_t stamp_ns) = 0;
  virtual void stop_steady() = 0;
  // runtime: the capability's runtime (consumer, worker pool, relay) with a
  // no-op handler, `workers` wide, claiming `batch` at a time; its name.
  // The no-op handler counts its calls in runtime_handled(), so the drain can
  // wait for them without asking the database while the runtime works.
  virtual std::string start_runtime(int workers, int batch) = 0;
  virtual void stop_runtime() = 0;
  // Handler calls of the runtime started last (a redelivery counts again).
  [[nodiscard]] std::int64_t runtime_handled() const { return handled_.load(std::memory_order_relaxed); }

  [[nodiscard]] bool pg() const { return db_.kind() == engine::postgres; }
  database& db() { return db_; }
  void analyze() {
    // VACUUM as well as ANALYZE: since PostgreSQL 13 autovacuum also
    // vacuums insert-only tables, so a production backlog this old has had
    // its visibility map set and hint bits written; measuring the first
    // touch of a million fresh rows would time the preload, not the queue.
    if (pg()) db_.exec("VACUUM (ANALYZE) " + table());
  }
  std::int64_t count(const std::string& sql) { return std::stoll(db_.exec(sql).at(0).at(0).value_or("0")); }
  // SQLite preload: n rows written through the library, `per_call` rows per
  // call and `calls_per_tx` calls per transaction (one commit, one fsync).
  template <class Write>
  void sqlite_preload(long n, long per_call, int calls_per_tx, Write write) {
    for (long done = 0; done < n;) {
      sqlite::tx tx(db_);
      for (int k = 0; k < calls_per_tx && done < n; ++k) {
        const long b = std::min(per_call, n - done);
        write(tx, static_cast<std::size_t>(b));
        done += b;
      }
      tx.commit();
    }
  }
  void wipe(std::initializer_list<const char*> tables) {
    for (const char* t : tables) db_.exec((pg() ? "TRUNCATE " : "DELETE FROM ") + std::string(t));
  }
  // PostgreSQL: copies the row with id `tmpl` n times in one INSERT … SELECT
  // over generate_series, each copy with a fresh id whose last 12 hex digits
  // count up (ids keep their length and form) and, for time-ordered tables,
  // a time that many microseconds before the template's, so the copies keep a
  // strict order. `sql` has $1 = count and $2 = the template id.
  void clone(const std::string& sql, const std::string& tmpl, long n) {
    if (n > 0) db_.exec(sql, {static_cast<std::int64_t>(n), tmpl});
  }

 protected:
  database db_;
  std::atomic<std::int64_t> handled_{0};  // the runtime's handler calls
};

// One driver per capability over db, writing messages of about payload_bytes.
[[nodiscard]] std::unique_ptr<driver> make_mq_driver(database db, int payload_bytes, int claim_concurrency);
[[nodiscard]] std::unique_ptr<driver> make_ops_driver(database db, int payload_bytes, int claim_concurrency);
[[nodiscard]] std::unique_ptr<driver> make_outbox_driver(database db, int payload_bytes);

}  // namespace spool::bench
