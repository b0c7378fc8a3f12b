// The worker pool's shared state (op-queue.md §5, §7): what its workers and
// its services (heartbeats, rescuer, metrics reporter) read and change. Each
// part's code is in a file of its own beside this one; worker_pool.cpp holds
// the public API.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/db_backoff.hpp"
#include "runtime/service.hpp"
#include "runtime/worker_group.hpp"
#include "spool/ops/worker_pool.hpp"

namespace spool::ops {

// One claimed op while its handler runs.
struct flight {
  op claimed;
  std::stop_source stop;
  std::atomic<stop_cause> cause{stop_cause::none};
  // When the last heartbeat that succeeded (or the claim) was sent: the
  // server's lease runs at least lease_timeout from then. Written by the
  // poller and the heartbeat thread, read by the fencer.
  std::atomic<std::chrono::steady_clock::time_point> last_heartbeat{};
  // Held while the outcome is recorded; outcome_done once it was. A heartbeat
  // refused because the outcome just committed is then no lease loss.
  std::mutex outcome_mutex;
  bool outcome_done = false;  // under outcome_mutex
};

// One of handler and batch is set.
struct registration {
  op_handler handler;
  batch_op_handler batch;
  retry_policy retry;
};

// What a handler call came to (worker_pool/handlers.cpp).
struct handler_outcome {
  enum class result { ok, permanent, later, error } r = result::ok;
  std::string why;
  std::optional<retry_later> later;
};

// Throws invalid_argument with message unless ok.
void require(bool ok, const std::string& message);

struct worker_pool::impl {
  // Validates the options (invalid_argument) and fills the owner (worker_pool/config.cpp).
  impl(queue& q, worker_pool_options o);
  static void check_policy(const retry_policy& p);
  // add_handler and add_batch_handler: invalid_argument (empty type or
  // handler, bad policy), invalid_state (after start).
  void register_handler(const std::string& type, registration r, bool empty, const char* what,
                        const handler_options& options);

  // ---- metrics (worker_pool/lifecycle.cpp) ----
  void count(const std::string& type, std::uint64_t type_metrics::*field, std::uint64_t n = 1);
  void db_error(const std::string& type, std::string_view what, const std::exception& e);
  pool_metrics snapshot() const;
  void exported();

  // ---- workers and shared idle polling, §7.2 (worker_pool/polling.cpp) ----
  // Idle workers share polling: one of them (the poller) waits for a wake-up
  // or poll_interval and dequeues; the others are parked until a successful
  // claim hands them a turn (a ticket) or the poller's role is free. So an
  // idle pool makes at most one dequeue per poll_interval, and a burst of
  // ready ops wakes the workers one claim at a time.
  void work(const std::stop_token& stop);
  // A parked worker waits for a ticket or the free poller's role. False when stopped.
  bool wait_for_turn(const std::stop_token& stop, bool& poller);
  // After a claim: the poller's role goes to a parked worker, and one more
  // parked worker gets a turn (there may be more ready ops).
  void claimed_one(bool& poller);
  void give_up_poller();
  [[nodiscard]] std::uint64_t ready_generation();
  // The poller's wait: a NOTIFY naming one of our types (PostgreSQL with
  // notify), else the queue's change marker, or poll_interval as the fallback.
  void idle_wait(std::uint64_t marker, std::uint64_t ready_seen, const std::stop_token& stop);
  // On the listener's thread: short.
  void on_ready(bool matched);

  // ---- running claimed ops, §7.3 (worker_pool/handlers.cpp) ----
  void end_claim(const std::vector<std::shared_ptr<flight>>& claimed);
  // Runs a claim's ops in turn. With batch > 1 the successful ones are acked
  // together after the last handler (one ack_batch: one round trip, one
  // commit); they stay in flight, heartbeated, until then. Ops not started
  // when stop() begins are released at once.
  void run_claimed(const std::vector<std::shared_ptr<flight>>& claimed, const std::stop_token& stop);
  // One ack_batch for the ops whose handlers succeeded; a lease refused in it
  // (lost, or the op no longer running) is counted as ack would have thrown.
  void ack_together(const std::vector<std::shared_ptr<flight>>& done);
  void finish(const std::shared_ptr<flight>& f);
  // Runs the handler and records its outcome; with ack_later a success is
  // not recorded but returned (true) for the caller's ack_batch.
  bool run(flight& f, bool ack_later);
  // Runs a batch handler once for group (ops of one type) and records each
  // op's outcome; returns the ones to ack together.
  std::vector<std::shared_ptr<flight>> run_batch(const std::vector<std::shared_ptr<flight>>& group,
                                                 const registration& reg);
  // Calls a handler, catching its outcome, and observes its latency for type.
  handler_outcome invoke(const std::string& type, const std::function<void()>& call);
  // Records f's share of an outcome; true: a success left to the caller's ack_batch.
  bool settle(flight& f, const handler_outcome& out, const registration& reg, bool ack_later);

  // ---- recording outcomes (worker_pool/outcomes.cpp) ----
  static std::string_view token(const op& o) { return o.lease_token ? std::string_view(*o.lease_token) : ""; }
  std::string message(std::string_view text) const;
  // Runs an outcome call with a fresh deadline (never the shutdown signal),
  // retrying unavailable / in_doubt with backoff until outcome_deadline: a
  // replay of a recorded outcome succeeds (§4.5), so this is not blind.
  void record(flight& f, std::string_view what, const std::function<void(const call_options&)>& call);

  // ---- heartbeats, §5.1 (worker_pool/heartbeats.cpp) ----
  // One heartbeat of every live lease; the wait before the next.
  std::chrono::milliseconds heartbeat_round();
  bool finished(const flight& f);
  void lose(flight& f, std::string_view why);
  // Self-fencing: loses every live lease whose last successful heartbeat was
  // sent lease_timeout - heartbeat_interval ago or more, so a pool that
  // cannot reach the database (a partition, a hung server) stops its
  // handlers before the server can give their ops to another pool, whatever
  // its own heartbeat call is waiting for. Returns the wait until the next
  // lease could reach that point (at most heartbeat_interval).
  std::optional<std::chrono::milliseconds> fence_round();

  // ---- rescuer, §5.2 (worker_pool/rescuer.cpp) ----
  // The rescuer's wait: rescue_interval with ±20 % jitter.
  std::chrono::milliseconds rescue_wait();
  // One rescue round; the wait before the next, or nullopt once the queue is stopped.
  std::optional<std::chrono::milliseconds> rescue_round();

  // ---- lifecycle (worker_pool/lifecycle.cpp) ----
  void start();
  stop_report stop(std::chrono::milliseconds deadline);

  queue& q;
  worker_pool_options opts;
  retry_policy default_retry;
  std::map<std::string, registration> handlers;
  std::vector<std::string> type_list;

  std::mutex lifecycle;
  bool started = false, stopped = false;
  stop_report report;

  mutable std::mutex flights_mutex;
  std::condition_variable flights_cv;
  std::map<std::string, std::shared_ptr<flight>> flights;
  int claiming = 0;

  // Shared idle polling (§7.2).
  std::mutex idle_mutex;
  std::condition_variable_any idle_cv;
  int parked = 0;               // workers waiting for a turn
  int tickets = 0;              // turns handed out by successful claims, ≤ parked
  bool poller_taken = false;    // one idle worker polls
  bool by_notify = false;       // set before the workers start
  std::uint64_t ready_gen = 0;  // NOTIFYs naming our types and "look now" events

  mutable std::mutex metrics_mutex;
  std::map<std::string, type_metrics> counters;
  std::uint64_t wakeups = 0, idle_polls = 0, dequeues = 0;

  std::mutex rng_mutex;
  std::mt19937_64 rng{std::random_device{}()};

  spool::detail::worker_group workers;  // their stop token is the claim stop
  spool::detail::periodic_service heartbeater, fencer, rescuer, reporter;
  spool::detail::db_backoff heartbeat_backoff, rescue_backoff;  // each used by its service's thread only
  std::mt19937_64 rescue_rng{std::random_device{}()};           // the rescuer's thread only
  // Last: destroyed first, so no listener callback outlives the members above.
  std::shared_ptr<void> subscription;
};

}  // namespace spool::ops
