// The relay's shared state (outbox.md §7): what its services (claims,
// workers, delivery records, lease renewal, the breaker, sessions) read and
// change under one mutex. Each service's code is in a file of its own beside
// this one; relay.cpp holds the public lifecycle.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/service.hpp"
#include "runtime/worker_group.hpp"
#include "spool/outbox/relay.hpp"

namespace spool::outbox {

using steady = std::chrono::steady_clock;

namespace detail {

[[noreturn]] void invalid_relay_config(const std::string& message);
// True for a failure code of the documented form ([a-z0-9_.]{1,64}).
[[nodiscard]] bool valid_failure_code(std::string_view code);

}  // namespace detail

// Phases of a held lease; the one who moves it out of publishing records.
enum phase : int { publishing = 0, transition = 1, done = 2, abandoned = 3 };

struct flight {
  claimed_message m;
  std::stop_source stop;  // asks the sink call to stop
  std::atomic<bool> lost{false};
  std::atomic<int> ph{publishing};
  std::atomic<steady::rep> deadline{0};  // local estimate of leased_until
  std::uint64_t probe = 0;               // the half-open probe's number (relay::impl::probes), or 0
  bool deferred = false;                 // delivered; its mark waits in pending_marks
};

struct relay::impl {
  // Validates every option (invalid_argument, reason invalid_config) and
  // fills the defaults (relay/config.cpp).
  impl(store& s, std::shared_ptr<sink> k, relay_options opts);

  store& st;
  std::shared_ptr<sink> sk;
  relay_options o;
  std::string owner;
  std::size_t claim_batch = 0;
  std::size_t threads = 0;  // workers: sink calls at once
  // Claim rounds at once, and delivery records at once (config.cpp): one
  // claimer and one recorder leave a fast sink's workers waiting on two
  // database round trips in series, while the library's own loop runs one
  // claim and one record per worker; several keep the database busy.
  std::size_t claimers = 1;
  std::chrono::milliseconds renew{0};

  // Everything below is guarded by mu.
  mutable std::mutex mu;
  std::condition_variable_any cv;                          // tasks, capacity, flights, stop
  std::map<std::string, std::shared_ptr<flight>> flights;  // every held lease, by id
  std::deque<std::shared_ptr<flight>> tasks;               // claimed rows waiting for a worker
  std::size_t busy = 0;                                    // workers with a row
  bool session_over = false;
  relay_metrics m;
  relay_health h;
  std::uint32_t consecutive_transient = 0;
  steady::time_point open_until{};
  std::chrono::milliseconds breaker_period{0};
  bool probe_out = false;  // the half-open probe is asked for or held
  // Probes asked for so far: a probe's end clears probe_out only if no
  // later probe was asked meanwhile (its breaker outcome may reopen the
  // breaker and a next probe go out before its flight is finished).
  std::uint64_t probes = 0;
  std::size_t reserved = 0;  // rows asked for by claim rounds in progress
  bool woken = false;        // a change notification arrived since the last claim
  // An ordered envelope's delivery was recorded since the last claim: its
  // key's next envelope may be claimable now, so the loop need not wait for
  // the poll (nobody notifies about it).
  bool successor_ready = false;
  // Delivered rows whose mark_delivered is recorded together (one
  // mark_delivered_batch, one transaction) by whichever worker flushes; they
  // stay in flights, their leases renewed, until then.
  std::vector<std::shared_ptr<flight>> pending_marks;
  std::size_t flushing = 0;  // record rounds in progress, at most `claimers`
  std::shared_ptr<void> subscription;

  std::atomic<bool> running{false};
  std::atomic<bool> stopping{false};  // shutdown: unpublished rows are released
  std::stop_source stop_src;          // stop()
  std::mutex stop_mu;
  std::thread background;
  std::mutex sleep_mu;
  std::condition_variable_any sleep_cv;

  // ---- helpers (relay.cpp) ----
  template <class F>
  void with_metrics(F&& f) {
    std::lock_guard lock(mu);
    f(m);
  }
  void store_error(std::string_view what, const std::exception& e);
  void store_ok();
  [[nodiscard]] std::size_t free_capacity_locked() const;
  // A claim round may start: a whole claim's worth of capacity is free, or
  // some is and nothing else is under way (no queued row, no other round).
  [[nodiscard]] bool claimable_locked() const;
  // Marks a lease lost once; asks its sink call to stop.
  void mark_lost(flight& f, std::string_view why);

  // ---- breaker, rule 5 (relay/breaker.cpp) ----
  // ---- breaker (rule 5) ----
  // How many rows a claim may ask for now (0: none), given free capacity.
  std::size_t claim_allowance_locked(std::size_t free);
  void breaker_outcome(outcome_class c);
  void open_locked();
  void breaker_after_delivery_locked();

  // ---- transitions, rule 7 (relay/transitions.cpp) ----
  enum class recorded { ok, lost, failed, sink_failed };
  // Runs fn under transition_timeout, independent of stop, retried on
  // unavailable. An in_doubt attempt is resolved by re-reading the row
  // (rule 7): showing `committed` it took effect; still held by this lease it
  // is repeated; anything else means the lease is gone.
  recorded run_transition(flight& f, std::string_view what, lease_fate committed,
                          const std::function<void(const call_options&)>& fn,
                          sink_outcome* sink_part = nullptr);
  void release(flight& f);
  void dead_letter(flight& f, failure fl);
  // The retry delay of failure n (rule 3, 4, 11).
  std::chrono::milliseconds retry_delay(std::uint32_t n, const sink_outcome& out);
  // The class after the optional classifier (rule 3, 11).
  outcome_class classify(const claimed_message& cm, sink_outcome& out);

  // ---- publishing one row (relay/publish.cpp) ----
  [[nodiscard]] bool scoped(const envelope& e) const;
  std::shared_ptr<flight> make_flight(claimed_message cm, steady::time_point asked_at);
  // Moves a row out of publishing; false when shutdown abandoned it.
  static bool take(flight& f);
  // Publishes one row and records its outcome. Returns the scope's next row
  // when claim-next leased one (rule 9).
  std::shared_ptr<flight> handle(flight& f);
  // Records a permanent or transient failure (rule 3, 10).
  void failed(flight& f, outcome_class c, const sink_outcome& out);
  std::shared_ptr<flight> delivered(flight& f);

  // ---- workers (relay/workers.cpp) ----
  // ---- workers ----
  void worker();
  void finish_flight(const std::shared_ptr<flight>& f);

  // ---- delivery records in batches (relay/records.cpp) ----
  // Records every pending delivered row with mark_delivered_batch, up to
  // `claimers` workers at a time; rows deferred meanwhile go in the next
  // round.
  void flush_marks();
  // One batch of delivered rows recorded: by the sink when it records
  // deliveries itself, else mark_delivered_batch.
  std::vector<sink::batch_record> record_batch(const std::vector<std::shared_ptr<flight>>& rows,
                                               const call_options& c);
  // record_batch under transition_timeout, retried on unavailable;
  // an in_doubt attempt is resolved per row by re-reading it (rule 7), as
  // run_transition does for one row.
  void record_marks(const std::vector<std::shared_ptr<flight>>& rows);

  // ---- renewal, rule 2 (relay/renewer.cpp) ----
  // One renewal round of every held lease; the wait before the next.
  std::chrono::milliseconds renew_round();
  // Self-fencing: marks lost every lease in publishing whose deadline is
  // within one renew_interval, so a relay whose renewals do not get through
  // (a partition, a hung server) stops its sink calls before the server can
  // give their rows to another relay, whatever its renewal call is waiting
  // for. Returns the wait until the next lease could reach that point.
  std::optional<std::chrono::milliseconds> fence_round();

  // ---- claims, rules 1, 5, 8 (relay/claims.cpp) ----
  // ---- claims (rule 1, 5, 8) ----
  // One claim round; returns {asked, got}.
  std::pair<std::size_t, std::size_t> claim_round();
  // A claimer's loop: `claimers` of them run at once during run().
  void loop(const std::stop_token& stop);

  // ---- sessions (relay/session.cpp) ----
  spool::detail::worker_group workers;  // they end when the session is over, not by the token
  spool::detail::periodic_service renewer_service, fencer_service, reporter_service;

  void begin_session();
  void report();
  // Ends a session; graceful (rule 10) when stop was requested.
  void end_session(bool graceful);
  [[nodiscard]] relay_metrics snapshot() const;
  // run(): until stop or stop(), then a graceful shutdown. running is set.
  void run_until(const std::stop_token& stop);
};

}  // namespace spool::outbox
