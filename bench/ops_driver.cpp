// The ops driver of the benchmark workloads: enqueue / dequeue + ack on one
// ops::queue, steady consumers and the runtime through ops::worker_pool.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_driver.hpp"
#include "spool/error.hpp"
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"

namespace spool::bench {
namespace {

using namespace std::chrono_literals;
namespace ops = spool::ops;

class ops_driver final : public driver {
 public:
  ops_driver(database db, int payload_bytes, int claim_concurrency)
      : driver(std::move(db)), payload_bytes_(payload_bytes), claim_concurrency_(claim_concurrency) {
    q_ = std::make_unique<ops::queue>(db_, qopts(false));
    op_ = make_op(payload_bytes_, std::nullopt);
  }
  std::optional<std::size_t> claim_concurrency() const override { return qopts(false).claim_concurrency; }
  std::string capability() const override { return "ops"; }
  std::string table() const override { return "ops_queue"; }
  std::int64_t foreign_rows() override {
    return count(fmt::format("SELECT count(*) FROM ops_queue WHERE type <> '{}'", bench_name));
  }
  void clear() override { wipe({"ops_queue"}); }
  void publish(int n) override {
    if (n == 1) {
      (void)q_->enqueue(op_);
    } else {
      (void)q_->enqueue_batch(std::vector<ops::new_op>(static_cast<std::size_t>(n), op_));
    }
  }
  void preload(long n) override {
    if (n <= 0) return;
    if (!pg()) {
      sqlite_preload(n, 100, 100, [&](sqlite::tx& tx, std::size_t b) {
        (void)q_->enqueue_batch(tx, std::vector<ops::new_op>(b, op_));
      });
      return;
    }
    const auto tmpl = q_->enqueue(op_).id;
    clone(
        "INSERT INTO ops_queue (id, type, payload, status, priority, attempts, max_attempts, last_error, "
        "enqueued_at, started_at, finished_at, not_before, dedup_key, lease_owner, lease_token, "
        "heartbeat_at) "
        "SELECT left(t.id, 20) || lpad(to_hex(g), 12, '0'), t.type, t.payload, t.status, t.priority, "
        "t.attempts, "
        "t.max_attempts, t.last_error, t.enqueued_at - ($1::bigint - g + 1) * interval '1 microsecond', "
        "t.started_at, t.finished_at, t.not_before, t.dedup_key, t.lease_owner, t.lease_token, "
        "t.heartbeat_at "
        "FROM ops_queue t, generate_series(1, $1::bigint) g WHERE t.id = $2 ON CONFLICT DO NOTHING",
        tmpl, n - 1);
  }
  std::int64_t waiting() override { return count("SELECT count(*) FROM ops_queue WHERE status = 'pending'"); }
  consumed consume(int batch, int worker) override {
    const std::string& owner = owners_.at(static_cast<std::size_t>(worker));
    if (batch > 1) {
      const auto claimed = q_->dequeue_batch(static_cast<std::size_t>(batch), types_, owner);
      if (claimed.empty()) return {};
      std::vector<ops::lease> leases;
      leases.reserve(claimed.size());
      for (const auto& c : claimed) leases.push_back({c.id, c.lease_token.value_or("")});
      const auto refused = q_->ack_batch(leases);
      return {static_cast<long>(claimed.size()), static_cast<long>(claimed.size() - refused.size())};
    }
    auto got = q_->dequeue(types_, owner);
    if (!got) return {};
    // An ack that met a busy database is retried with the same token: the
    // replay of a recorded ack succeeds (op-queue.md §4.5).
    for (int attempt = 1;; ++attempt) {
      try {
        q_->ack(got->id, got->lease_token.value_or(""));
        return {1, 1};
      } catch (const spool::error& e) {
        if ((!e.retryable() && e.code() != errc::in_doubt) || attempt >= 100) throw;
        std::this_thread::sleep_for(10ms);
      }
    }
  }
  void start_steady(int consumers, latency_log& log) override {
    steady_q_ = std::make_unique<ops::queue>(db_, qopts(true));
    ops::worker_pool_options po;
    po.workers = consumers;
    pool_ = std::make_unique<ops::worker_pool>(*steady_q_, po);
    pool_->add_handler(bench_name, [&log](const ops::op& o, ops::handler_context&) {
      log.add(o.payload.at("t").get<std::int64_t>());
    });
    pool_->start();
  }
  void publish_stamped(std::int64_t stamp_ns) override {
    (void)steady_q_->enqueue(make_op(payload_bytes_, stamp_ns));
  }
  void stop_steady() override {
    (void)pool_->stop();
    pool_.reset();
    steady_q_.reset();
  }
  std::string start_runtime(int workers, int batch) override {
    ops::worker_pool_options po;
    po.workers = workers;
    po.batch = static_cast<std::size_t>(batch);
    po.poll_interval = 100ms;
    po.rescuer = false;
    pool_ = std::make_unique<ops::worker_pool>(*q_, po);
    handled_ = 0;
    pool_->add_handler(bench_name, [this](const ops::op&, ops::handler_context&) {
      handled_.fetch_add(1, std::memory_order_relaxed);
    });
    pool_->start();
    return "ops::worker_pool";
  }
  void stop_runtime() override {
    (void)pool_->stop();
    pool_.reset();
  }

 private:
  ops::queue_options qopts(bool notify) const {
    ops::queue_options o;
    o.notify = notify && pg();
    if (claim_concurrency_ >= 0) o.claim_concurrency = static_cast<std::size_t>(claim_concurrency_);
    return o;
  }
  // Type "spool_bench", payload {"pad":"xx…"} (and "t" when stamped) whose
  // serialised form is about payload_bytes long, no id (drawn from the OS
  // CSPRNG by enqueue, a cost that belongs in the measurement), no dedup key.
  static ops::new_op make_op(int payload_bytes, std::optional<std::int64_t> stamp) {
    constexpr int overhead = 10;  // {"pad":""}
    ops::new_op o;
    o.type = bench_name;
    o.payload = {{"pad", std::string(static_cast<std::size_t>(std::max(0, payload_bytes - overhead)), 'x')}};
    if (stamp) o.payload["t"] = *stamp;
    return o;
  }

  int payload_bytes_;
  int claim_concurrency_;  // -1: the library's default
  ops::new_op op_;
  std::vector<std::string> types_{bench_name};
  std::vector<std::string> owners_ = [] {
    std::vector<std::string> v;
    for (int i = 0; i < max_workers; ++i) v.push_back(fmt::format("bench-{}", i));
    return v;
  }();
  std::unique_ptr<ops::queue> q_;
  std::unique_ptr<ops::queue> steady_q_;
  std::unique_ptr<ops::worker_pool> pool_;
};

}  // namespace

std::unique_ptr<driver> make_ops_driver(database db, int payload_bytes, int claim_concurrency) {
  return std::make_unique<ops_driver>(std::move(db), payload_bytes, claim_concurrency);
}

}  // namespace spool::bench
