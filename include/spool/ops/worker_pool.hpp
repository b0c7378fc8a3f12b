// spool::ops::worker_pool — runs handlers by op type on N workers over an
// ops::queue (op-queue.md §5, §7): claims only registered types, heartbeats
// running ops, rescues expired leases (never a live op of another node),
// records outcomes fenced by the lease token, retries with exponential backoff
// and jitter, and stops gracefully, recording every finished outcome.
// Thread safety: add_handler and start are for the owning thread before the
// pool runs; stop(), metrics() and the destructor are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include "spool/metrics.hpp"
#include "spool/ops/op.hpp"
#include "spool/ops/queue.hpp"

namespace spool::ops {

// Thrown by a handler: fail the op without retry (T6), whatever its budget.
class permanent_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by a handler: fail with retry at a chosen time (T5), or failed once
// the budget is spent. A delay is computed on the database's clock.
class retry_later : public std::runtime_error {
 public:
  retry_later(const std::string& message, std::chrono::microseconds delay)
      : std::runtime_error(message), delay_(delay) {}
  retry_later(const std::string& message, time_point at) : std::runtime_error(message), at_(at) {}
  [[nodiscard]] const std::optional<std::chrono::microseconds>& delay() const noexcept { return delay_; }
  [[nodiscard]] const std::optional<time_point>& at() const noexcept { return at_; }

 private:
  std::optional<std::chrono::microseconds> delay_;
  std::optional<time_point> at_;
};

// Why a handler's stop token was set.
enum class stop_cause { none, shutdown, lease_lost };

// What a handler gets besides its op. Valid for the duration of the call.
class handler_context {
 public:
  handler_context(std::stop_token stop, const std::atomic<stop_cause>* cause)
      : stop_(std::move(stop)), cause_(cause) {}
  // Set on shutdown cancellation or lease loss; handlers MUST observe it.
  [[nodiscard]] const std::stop_token& stop_token() const noexcept { return stop_; }
  [[nodiscard]] bool stop_requested() const noexcept { return stop_.stop_requested(); }
  // none until the token is set.
  [[nodiscard]] stop_cause cause() const noexcept { return cause_ ? cause_->load() : stop_cause::none; }

 private:
  std::stop_token stop_;
  const std::atomic<stop_cause>* cause_;
};

// The op (with its lease token) and the context. Return normally: ack.
using op_handler = std::function<void(const op&, handler_context&)>;

// The ops of one claim that share a type, in claim order, and one context for
// them all. Return normally: ack them all (together, one ack_batch).
using batch_op_handler = std::function<void(std::span<const op>, handler_context&)>;

// The retry curve of §7.3: delay after the claim numbered n =
// min(cap, base · multiplier^(n−1)) × uniform[1 − jitter, 1 + jitter], capped.
struct retry_policy {
  std::chrono::milliseconds base{30000};
  double multiplier = 2.0;
  std::chrono::milliseconds cap{std::chrono::hours(1)};
  double jitter = 0.2;  // in [0, 1)
};

// Per-type overrides of the pool's retry policy.
struct handler_options {
  std::optional<retry_policy> retry;
};

struct pool_metrics;

struct worker_pool_options {
  int workers = 4;  // ≥ 1
  // Ops each worker claims per dequeue (1 … 1000, dequeue_batch above 1). The
  // worker runs them in turn and records the successes with one ack_batch
  // after the last handler (failures at once); claimed ops waiting their turn
  // are heartbeated like running ones, and released unstarted at stop().
  std::size_t batch = 1;
  std::chrono::milliseconds poll_interval{500};         // idle poll period
  std::chrono::milliseconds max_db_backoff{30000};      // cap of the database-error backoff
  std::chrono::milliseconds heartbeat_interval{10000};  // §5.1
  // ≥ 3 × heartbeat_interval. A handler whose heartbeats have not got through
  // for lease_timeout - heartbeat_interval (since the last successful one was
  // sent) is cancelled: it stops before its lease can expire on the server.
  std::chrono::milliseconds lease_timeout{60000};
  std::chrono::milliseconds rescue_interval{10000};                // ±20 % jitter
  bool rescuer = true;                                             // run the rescuer in this pool
  std::optional<std::chrono::milliseconds> legacy_orphan_timeout;  // §5.3; unset: off
  std::chrono::milliseconds retry_base{30000};
  double retry_multiplier = 2.0;
  std::chrono::milliseconds retry_cap{std::chrono::hours(1)};
  double retry_jitter = 0.2;
  std::chrono::milliseconds shutdown_deadline{30000};  // stop(): handlers may finish until then
  std::chrono::milliseconds cancel_grace{5000};        // then cancellation, and this much more
  std::chrono::milliseconds outcome_deadline{5000};    // a fresh deadline for every outcome call
  std::string owner;                                   // empty: the queue's owner()
  std::size_t max_error_bytes = 4096;                  // last_error truncated at a UTF-8 boundary
  // Exporters (§7.5): called with a snapshot every metrics_interval on the
  // pool's reporter thread, and once more when stop() ends. Must not call
  // the pool's stop(). Unset: no reporter thread.
  std::function<void(const pool_metrics&)> on_metrics;
  std::chrono::milliseconds metrics_interval{10000};
};

// Counters of one op type.
struct type_metrics {
  std::uint64_t claimed = 0;
  std::uint64_t succeeded = 0;
  std::uint64_t failed = 0;   // terminal
  std::uint64_t retried = 0;  // back to pending after a failure
  std::uint64_t released = 0;
  std::uint64_t recovered = 0;  // by this pool's rescuer
  std::uint64_t lease_lost = 0;
  std::uint64_t db_errors = 0;
  latency_histogram handler_latency;  // handler start to return (§7.5)
  friend bool operator==(const type_metrics&, const type_metrics&) = default;
};

struct pool_metrics {
  // Per registered type (and per type this pool's rescuer recovered). Errors
  // not tied to one type (dequeue, heartbeat, rescuer) are counted under "".
  std::map<std::string, type_metrics> by_type;
  std::int64_t in_flight = 0;  // handlers running now
  // Idle waits of the pool's one polling worker (§7.2): ended by a wake-up
  // (a NOTIFY naming a registered type or the listener (re)starting, this
  // process's commit, another process's commit on SQLite), or by
  // poll_interval passing.
  std::uint64_t wakeups = 0;
  std::uint64_t idle_polls = 0;
  std::uint64_t dequeues = 0;  // dequeue calls made by the workers
  [[nodiscard]] type_metrics total() const;
};

struct stop_report {
  // Handlers still running after cancel_grace: their heartbeats stop, so a
  // rescuer recovers them once their lease expires.
  std::vector<std::string> still_running;
};

// The §7.3 delay for attempts = n with a uniform draw u in [0, 1] (0.5: no jitter).
[[nodiscard]] std::chrono::milliseconds backoff_delay(std::int32_t attempts, const retry_policy& policy,
                                                      double u);

class worker_pool {
 public:
  // q MUST outlive the pool. Errors: invalid_argument (workers < 1, a
  // non-positive interval, lease_timeout < 3 × heartbeat_interval, jitter
  // outside [0, 1), multiplier < 1, max_error_bytes 0).
  explicit worker_pool(queue& q, worker_pool_options options = {});
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;
  // stop() with the default deadlines, then joins every thread (including
  // handlers still running: they MUST observe their stop token).
  ~worker_pool();

  // Registers (or replaces) the handler of type. Errors: invalid_argument
  // (empty type, empty handler), invalid_state (after start).
  void add_handler(const std::string& type, op_handler handler, handler_options options = {});

  // Registers (or replaces) a handler that takes the ops of type a claim
  // brought (worker_pool_options::batch of them at most) in one call, so
  // that a handler with a fixed cost per call (a process started, a request
  // sent) pays it once per claim. The call's outcome is every op's: return
  // acks them together; permanent_error fails them all; retry_later or any
  // other exception retries each by its own attempts and the type's policy.
  // The context stops on shutdown or when any op of the call loses its lease;
  // an op whose lease was lost gets no outcome (as with add_handler). Errors:
  // as add_handler.
  void add_batch_handler(const std::string& type, batch_op_handler handler, handler_options options = {});

  // Starts the workers, the heartbeater and (unless off) the rescuer. Errors:
  // invalid_state (no handler registered; already started or stopped).
  void start();

  // Graceful shutdown (§7.4): stops claiming, lets handlers finish until
  // deadline (default shutdown_deadline), then requests cancellation and
  // waits cancel_grace more. Every finished outcome is recorded with a fresh
  // outcome_deadline. Idempotent (later calls return the first report); a
  // stopped pool cannot be started again.
  stop_report stop(std::optional<std::chrono::milliseconds> deadline = std::nullopt);

  [[nodiscard]] pool_metrics metrics() const;
  [[nodiscard]] const std::string& owner() const noexcept;
  // The sorted registered types passed to every dequeue.
  [[nodiscard]] std::vector<std::string> types() const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace spool::ops
