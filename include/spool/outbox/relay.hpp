// spool::outbox::relay — claims committed envelopes from a store, publishes
// them through a sink and records each outcome, fenced by its lease
// (outbox.md §7): capacity-bounded claims, renewal of every held lease,
// retries with backoff, a circuit breaker, own deadlines for transitions,
// hot-key draining and graceful shutdown.
// Thread safety: run(), start() and run_once() are for one owning thread
// (only one of them at a time); stop(), metrics() and health() are safe
// from any thread, also while run() blocks. The store and sink MUST outlive
// the relay.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "spool/metrics.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/store.hpp"

namespace spool::outbox {

// The retry backoff of rule 4: the ceiling for failure n is
// min(cap, initial × 2^(n−1)); the delay is uniform in [ceiling ÷ 2, ceiling].
struct backoff_policy {
  std::chrono::milliseconds initial{1000};
  std::chrono::milliseconds cap{std::chrono::minutes(10)};
};

// The ceiling for failure number n (n ≥ 1; 0 counts as 1).
[[nodiscard]] std::chrono::milliseconds backoff_ceiling(std::uint32_t failure,
                                                        const backoff_policy& p) noexcept;
// The delay for failure n with a uniform draw u in [0, 1]: ceiling ÷ 2 at
// u = 0 (the worst case for an outage), ceiling at u = 1.
[[nodiscard]] std::chrono::milliseconds backoff_delay(std::uint32_t failure, const backoff_policy& p,
                                                      double u) noexcept;

// Rule 5: opens after `failures` consecutive transient failures (across
// messages); stays open for open_period, doubling after each failed probe up
// to max_open_period; a delivered probe closes it.
struct breaker_policy {
  std::uint32_t failures = 5;                                          // ≥ 1
  std::chrono::milliseconds open_period{5000};                         // > 0
  std::chrono::milliseconds max_open_period{std::chrono::minutes(5)};  // ≥ open_period
};

enum class breaker_state { closed, open, half_open };
[[nodiscard]] std::string_view to_string(breaker_state s) noexcept;

struct relay_metrics;

struct relay_options {
  // unset: <host>:<pid>:<8 random hex>; else 1..255 bytes (empty: owner_required)
  std::optional<std::string> owner;
  // Leases held at once: claimed and not yet recorded (1..10,000).
  std::size_t max_in_flight = 16;
  // Sink calls at once (the relay's worker threads): 0 is max_in_flight
  // (which must then be ≤ 256); else 1..min(256, max_in_flight). Fewer sink
  // calls than leases suits a fast sink: claims of claim_batch rows queue for
  // the workers, and their deliveries are recorded together. A graceful stop
  // releases the queued rows one transaction each, so keep the queue (about
  // max_in_flight − sink_concurrency) to a few claims. Where several whole
  // claims fit in max_in_flight, the relay runs up to min(4, sink calls,
  // max_in_flight ÷ claim_batch) claim rounds at once, and as many batched
  // delivery records, each on a connection of its own.
  std::size_t sink_concurrency = 0;
  std::size_t claim_batch = 0;  // 0: min(max_in_flight, store max_claim_batch); 1..store max_claim_batch
  std::chrono::milliseconds lease_duration{30000};  // ≤ store max_lease_duration
  std::chrono::milliseconds renew_interval{0};      // 0: lease_duration ÷ 3; (0, lease ÷ 2]
  serialization mode = serialization::none;
  std::chrono::milliseconds poll_interval{0};  // 0: 1 s, 30 s with notify; else 10 ms..10 min
  // Rule 8: wake on the store's change notifications (store::subscribe_changes:
  // PostgreSQL NOTIFY from writers with notify on, through the process's
  // shared listener; SQLite commits of this process) as well as polling.
  bool notify = false;
  std::uint32_t max_attempts = 25;  // failures; 1..10,000
  std::uint32_t max_claims = 100;   // max_attempts..1,000,000
  backoff_policy backoff;           // cap ≤ store max_retry_delay
  breaker_policy breaker;
  std::chrono::milliseconds transition_timeout{5000};  // 1..60 s
  std::chrono::milliseconds shutdown_grace{10000};     // 0..10 min
  // Optional: overrides the sink's class (rule 3). An exception is
  // classifier_threw (transient); a value outside the enum invalid_error_class
  // (transient).
  std::function<outcome_class(const claimed_message&, const sink_outcome&)> classifier;
  // Optional: the delay for failure n instead of backoff_delay. An exception
  // is backoff_threw (delay 0); a negative or over-cap value invalid_backoff,
  // clamped to [0, cap].
  std::function<std::chrono::milliseconds(std::uint32_t failure)> backoff_fn;
  // Exporter: a snapshot every metrics_interval on the relay's reporter
  // thread while it runs, and once more when it stops. Must not call stop().
  std::function<void(const relay_metrics&)> on_metrics;
  std::chrono::milliseconds metrics_interval{10000};
};

struct relay_metrics {
  std::uint64_t claimed = 0;              // rows leased (claims and claim-next)
  std::uint64_t delivered = 0;            // marked delivered
  std::uint64_t retried = 0;              // back to pending after a failure
  std::uint64_t dead_lettered = 0;        // permanent, attempts or claim budget spent
  std::uint64_t released = 0;             // unpublished at shutdown, no failure consumed
  std::uint64_t lease_lost = 0;           // renewal or transition found the lease gone
  std::uint64_t store_errors = 0;         // failed store calls (claim, renew, transitions)
  std::uint64_t delivery_unrecorded = 0;  // published, but the delivery could not be recorded
  std::uint64_t claims = 0;               // claim calls
  std::uint64_t wakeups = 0;              // claim rounds a notification or a listener (re)start asked for
  breaker_state breaker = breaker_state::closed;
  std::int64_t in_flight = 0;      // leases held now
  latency_histogram sink_latency;  // sink call start to return
};

struct relay_health {
  bool running = false;
  bool store_ok = true;  // the last store call succeeded
  bool sink_ok = true;   // the last sink outcome was not a transient failure
  breaker_state breaker = breaker_state::closed;
  std::string last_store_error;  // what() of the last failed store call
  std::string last_sink_error;   // code of the last transient sink failure
};

class relay {
 public:
  // Validates every option against its bounds and cross-checks it against
  // the store's options. Errors: invalid_argument with reason invalid_config
  // (the message names option and value), owner_required (an empty owner),
  // sink_required (a null sink). The store is a reference, so the spec's
  // store_required cannot arise.
  relay(store& s, std::shared_ptr<sink> sink, relay_options options = {});
  relay(const relay&) = delete;
  relay& operator=(const relay&) = delete;
  // stop(), then joins.
  ~relay();

  // Blocks until stop is requested (or stop() is called), then shuts down
  // gracefully (rule 10) and returns. Never returns on errors (rule 6).
  // Errors: invalid_state when the relay is already running.
  void run(std::stop_token stop);
  // run() on a background thread. Errors: invalid_state when running.
  void start();
  // Graceful stop of run()/start(); returns when the shutdown is done.
  // Idempotent; safe from any thread except the relay's own (a sink, a
  // classifier or on_metrics calling it would wait for itself).
  void stop();
  // One claim round (respecting capacity and the breaker) and waits for every
  // outcome (including hot-key successors) to be recorded. Returns the number
  // of rows claimed. Store errors of the claim are absorbed (0 returned).
  // Errors: invalid_state when running.
  std::size_t run_once();

  [[nodiscard]] relay_metrics metrics() const;
  [[nodiscard]] relay_health health() const;
  [[nodiscard]] const std::string& owner() const noexcept;
  [[nodiscard]] const relay_options& options() const noexcept;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace spool::outbox
