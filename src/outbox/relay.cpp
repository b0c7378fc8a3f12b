// The outbox relay (outbox.md §7).
#include "spool/outbox/relay.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "common/log.hpp"
#include "common/uuid.hpp"
#include "runtime/db_backoff.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::string_view to_string(breaker_state s) noexcept {
  switch (s) {
    case breaker_state::closed:
      return "closed";
    case breaker_state::open:
      return "open";
    case breaker_state::half_open:
      return "half_open";
  }
  return "closed";
}

std::chrono::milliseconds backoff_ceiling(std::uint32_t failure, const backoff_policy& p) noexcept {
  const std::uint32_t n = std::max<std::uint32_t>(failure, 1);
  const auto cap = std::max<std::int64_t>(p.cap.count(), 0);
  std::int64_t c = std::max<std::int64_t>(p.initial.count(), 0);
  for (std::uint32_t i = 1; i < n && c < cap; ++i) c *= 2;
  return std::chrono::milliseconds(std::min(c, cap));
}

std::chrono::milliseconds backoff_delay(std::uint32_t failure, const backoff_policy& p, double u) noexcept {
  const auto ceiling = static_cast<double>(backoff_ceiling(failure, p).count());
  const double d = ceiling / 2.0 + (ceiling / 2.0) * std::clamp(u, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(d)));
}

namespace {

[[noreturn]] void invalid_config(const std::string& message) {
  throw error(errc::invalid_argument, "relay: " + message, "invalid_config");
}

std::string default_owner() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  return fmt::format("{}:{}:{}", host, ::getpid(), spool::detail::uuid_v4().substr(0, 8));
}

bool valid_failure_code(std::string_view code) {
  if (code.empty() || code.size() > 64) return false;
  return std::all_of(code.begin(), code.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

double uniform01() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// Phases of a held lease; the one who moves it out of publishing records.
enum phase : int { publishing = 0, transition = 1, done = 2, abandoned = 3 };

struct flight {
  claimed_message m;
  std::stop_source stop;  // asks the sink call to stop
  std::atomic<bool> lost{false};
  std::atomic<int> ph{publishing};
  std::atomic<steady::rep> deadline{0};  // local estimate of leased_until
  bool probe = false;                    // the breaker's half-open probe
  bool deferred = false;                 // delivered; its mark waits in pending_marks
};

}  // namespace

struct relay::impl {
  impl(store& s, std::shared_ptr<sink> k, relay_options opts) : st(s), sk(std::move(k)), o(std::move(opts)) {
    if (!sk) throw error(errc::invalid_argument, "relay: a sink is required", "sink_required");
    const auto& so = st.options();
    if (o.owner) {
      if (o.owner->empty()) throw error(errc::invalid_argument, "relay: owner is empty", "owner_required");
      if (o.owner->size() > 255) invalid_config(fmt::format("owner is {} bytes, over 255", o.owner->size()));
      owner = *o.owner;
    } else {
      owner = default_owner();
    }
    if (o.max_in_flight < 1 || o.max_in_flight > 10000) {
      invalid_config(fmt::format("max_in_flight = {} is outside 1..10,000", o.max_in_flight));
    }
    threads = o.sink_concurrency == 0 ? o.max_in_flight : o.sink_concurrency;
    if (threads > 256 || threads > o.max_in_flight) {
      invalid_config(fmt::format("sink_concurrency = {} is outside 1..{} (at most 256 and max_in_flight {})",
                                 threads, std::min<std::size_t>(256, o.max_in_flight), o.max_in_flight));
    }
    claim_batch = o.claim_batch == 0 ? std::min(o.max_in_flight, so.max_claim_batch) : o.claim_batch;
    if (claim_batch > so.max_claim_batch) {
      invalid_config(fmt::format("claim_batch = {} is outside 1..{} (the store's max_claim_batch)",
                                 claim_batch, so.max_claim_batch));
    }
    if (o.lease_duration <= 0ms || o.lease_duration > so.max_lease_duration) {
      invalid_config(
          fmt::format("lease_duration = {} ms is outside (0, {} ms] (the store's max_lease_duration)",
                      o.lease_duration.count(),
                      std::chrono::duration_cast<std::chrono::milliseconds>(so.max_lease_duration).count()));
    }
    renew = o.renew_interval == 0ms ? o.lease_duration / 3 : o.renew_interval;
    if (renew <= 0ms || renew > o.lease_duration / 2) {
      invalid_config(fmt::format("renew_interval = {} ms is outside (0, lease_duration / 2 = {} ms]",
                                 renew.count(), (o.lease_duration / 2).count()));
    }
    if (o.mode != serialization::none && o.mode != serialization::by_ordering_key &&
        o.mode != serialization::by_topic) {
      invalid_config(fmt::format("serialization = {} is not none, by_ordering_key or by_topic",
                                 static_cast<int>(o.mode)));
    }
    if (o.poll_interval == 0ms) o.poll_interval = o.notify ? 30s : 1s;
    if (o.poll_interval < 10ms || o.poll_interval > 10min) {
      invalid_config(fmt::format("poll_interval = {} ms is outside 10 ms..10 min", o.poll_interval.count()));
    }
    if (o.max_attempts < 1 || o.max_attempts > 10000) {
      invalid_config(fmt::format("max_attempts = {} is outside 1..10000", o.max_attempts));
    }
    if (o.max_claims < o.max_attempts || o.max_claims > 1000000) {
      invalid_config(
          fmt::format("max_claims = {} is outside max_attempts ({})..1000000", o.max_claims, o.max_attempts));
    }
    if (o.backoff.initial <= 0ms || o.backoff.cap < o.backoff.initial || o.backoff.cap > so.max_retry_delay) {
      invalid_config(
          fmt::format("backoff initial = {} ms, cap = {} ms: need 0 < initial <= cap <= {} ms (the store's "
                      "max_retry_delay)",
                      o.backoff.initial.count(), o.backoff.cap.count(),
                      std::chrono::duration_cast<std::chrono::milliseconds>(so.max_retry_delay).count()));
    }
    if (o.breaker.failures < 1 || o.breaker.open_period <= 0ms ||
        o.breaker.max_open_period < o.breaker.open_period) {
      invalid_config(
          fmt::format("breaker failures = {}, open_period = {} ms, max_open_period = {} ms: need "
                      "failures >= 1 and 0 < open_period <= max_open_period",
                      o.breaker.failures, o.breaker.open_period.count(), o.breaker.max_open_period.count()));
    }
    if (o.transition_timeout < 1s || o.transition_timeout > 60s) {
      invalid_config(
          fmt::format("transition_timeout = {} ms is outside 1..60 s", o.transition_timeout.count()));
    }
    if (o.shutdown_grace < 0ms || o.shutdown_grace > 10min) {
      invalid_config(fmt::format("shutdown_grace = {} ms is outside 0..10 min", o.shutdown_grace.count()));
    }
    if (o.on_metrics && o.metrics_interval <= 0ms) {
      invalid_config(fmt::format("metrics_interval = {} ms must be positive", o.metrics_interval.count()));
    }
    breaker_period = o.breaker.open_period;
  }

  store& st;
  std::shared_ptr<sink> sk;
  relay_options o;
  std::string owner;
  std::size_t claim_batch = 0;
  std::size_t threads = 0;  // workers: sink calls at once
  std::chrono::milliseconds renew{0};

  // Everything below is guarded by mu.
  mutable std::mutex mu;
  std::condition_variable_any cv;                          // tasks, capacity, flights, stop
  std::map<std::string, std::shared_ptr<flight>> flights;  // every held lease, by id
  std::deque<std::shared_ptr<flight>> tasks;  // claimed rows waiting for a worker
  std::size_t busy = 0;                       // workers with a row
  bool session_over = false;
  relay_metrics m;
  relay_health h;
  std::uint32_t consecutive_transient = 0;
  steady::time_point open_until{};
  std::chrono::milliseconds breaker_period{0};
  bool probe_out = false;
  bool woken = false;  // a change notification arrived since the last claim
  // An ordered envelope's delivery was recorded since the last claim: its
  // key's next envelope may be claimable now, so the loop need not wait for
  // the poll (nobody notifies about it).
  bool successor_ready = false;
  // Delivered rows whose mark_delivered is recorded together (one
  // mark_delivered_batch, one transaction) by whichever worker flushes; they
  // stay in flights, their leases renewed, until then.
  std::vector<std::shared_ptr<flight>> pending_marks;
  bool flushing = false;
  std::size_t marking = 0;  // rows of the batch being recorded now
  std::shared_ptr<void> subscription;

  std::atomic<bool> running{false};
  std::atomic<bool> stopping{false};  // shutdown: unpublished rows are released
  std::stop_source stop_src;          // stop()
  std::mutex stop_mu;
  std::thread background;
  std::mutex sleep_mu;
  std::condition_variable_any sleep_cv;

  // ---- helpers ----
  template <class F>
  void with_metrics(F&& f) {
    std::lock_guard lock(mu);
    f(m);
  }
  void store_error(std::string_view what, const std::exception& e) {
    {
      std::lock_guard lock(mu);
      ++m.store_errors;
      h.store_ok = false;
      h.last_store_error = fmt::format("{}: {}", what, e.what());
    }
    log().warn("outbox relay {}: {} failed: {}", owner, what, e.what());
  }
  void store_ok() {
    std::lock_guard lock(mu);
    h.store_ok = true;
  }
  void sleep_for(std::chrono::milliseconds d, const std::stop_token& stop) {
    std::unique_lock lock(sleep_mu);
    (void)sleep_cv.wait_for(lock, stop, d, [] { return false; });
  }
  [[nodiscard]] std::size_t free_capacity_locked() const {
    // Delivered rows awaiting their mark still hold leases: they count.
    const std::size_t held = busy + tasks.size() + pending_marks.size() + marking;
    return o.max_in_flight - std::min(o.max_in_flight, held);
  }

  // Marks a lease lost once; asks its sink call to stop.
  void mark_lost(flight& f, std::string_view why) {
    if (f.lost.exchange(true)) return;
    f.stop.request_stop();
    with_metrics([](relay_metrics& x) { ++x.lease_lost; });
    log().warn("outbox relay {}: lease of {} lost ({})", owner, f.m.message.id, why);
  }

  // ---- breaker (rule 5) ----
  // How many rows a claim may ask for now (0: none), given free capacity.
  std::size_t claim_allowance_locked(std::size_t free) {
    if (m.breaker == breaker_state::open) {
      if (steady::now() < open_until) return 0;
      m.breaker = breaker_state::half_open;
      probe_out = false;
      log().info("outbox relay {}: breaker half-open, claiming one probe row", owner);
    }
    if (m.breaker == breaker_state::half_open) return probe_out ? 0 : std::min<std::size_t>(free, 1);
    return std::min(free, claim_batch);
  }
  void breaker_outcome(outcome_class c) {
    std::lock_guard lock(mu);
    if (c == outcome_class::delivered) {
      consecutive_transient = 0;
      if (m.breaker == breaker_state::half_open) {
        m.breaker = breaker_state::closed;
        breaker_period = o.breaker.open_period;
        probe_out = false;
        log().info("outbox relay {}: breaker closed", owner);
      }
    } else if (c == outcome_class::transient) {
      ++consecutive_transient;
      if (m.breaker == breaker_state::half_open) {
        breaker_period = std::min(o.breaker.max_open_period, breaker_period * 2);
        open_locked();
      } else if (m.breaker == breaker_state::closed && consecutive_transient >= o.breaker.failures) {
        breaker_period = o.breaker.open_period;
        open_locked();
      }
    }
    h.breaker = m.breaker;
  }
  void open_locked() {
    m.breaker = breaker_state::open;
    probe_out = false;
    open_until = steady::now() + breaker_period;
    log().warn("outbox relay {}: breaker open for {} ms after {} consecutive transient failures", owner,
               breaker_period.count(), consecutive_transient);
  }

  // ---- transitions (rule 7) ----
  enum class recorded { ok, lost, failed, sink_failed };
  // Runs fn under transition_timeout, independent of stop, retried on
  // unavailable. An in_doubt attempt is resolved by re-reading the row
  // (rule 7): showing `committed` it took effect; still held by this lease it
  // is repeated; anything else means the lease is gone.
  template <class F>
  recorded run_transition(flight& f, std::string_view what, lease_fate committed, F&& fn,
                          sink_outcome* sink_part = nullptr) {
    const auto deadline = steady::now() + o.transition_timeout;
    auto pause = 20ms;
    bool doubt = false;
    for (;;) {
      try {
        if (doubt) {
          const lease_fate now = st.check_lease(f.m.ref, call_options{deadline, {}});
          store_ok();
          if (now == committed) {
            log().info("outbox relay {}: {} of {} was in doubt; the row shows it committed", owner, what,
                       f.m.message.id);
            return recorded::ok;
          }
          if (now != lease_fate::held) {
            log().warn("outbox relay {}: {} of {} was in doubt; the row is {} now", owner, what, f.m.message.id,
                       to_string(now));
            mark_lost(f, what);
            return recorded::lost;
          }
          doubt = false;  // still ours and unchanged: the attempt did not commit; repeat it
        }
        fn(call_options{deadline, {}});
        store_ok();
        return recorded::ok;
      } catch (const error& e) {
        if (e.code() == errc::lease_lost) {
          mark_lost(f, what);
          return recorded::lost;
        }
        store_error(what, e);
        if (e.code() == errc::in_doubt) doubt = true;
        if (e.code() != errc::unavailable && e.code() != errc::in_doubt) return recorded::failed;
      } catch (const sink_failed& e) {
        if (sink_part != nullptr) *sink_part = e.outcome();
        return recorded::sink_failed;
      } catch (const std::exception& e) {
        store_error(what, e);
        return recorded::failed;
      }
      const auto now = steady::now();
      if (now >= deadline) return recorded::failed;
      std::this_thread::sleep_for(std::min<steady::duration>(pause, deadline - now));
      pause = std::min(pause * 2, 500ms);
    }
  }

  void release(flight& f) {
    if (run_transition(f, "release_lease", lease_fate::pending, [&](const call_options& c) { st.release_lease(f.m.ref, c); }) ==
        recorded::ok) {
      with_metrics([](relay_metrics& x) { ++x.released; });
    }
  }
  void dead_letter(flight& f, failure fl) {
    if (run_transition(f, "dead_letter", lease_fate::dead, [&](const call_options& c) { st.dead_letter(f.m.ref, fl, c); }) ==
        recorded::ok) {
      with_metrics([](relay_metrics& x) { ++x.dead_lettered; });
      log().warn("outbox relay {}: dead-lettered {} ({})", owner, f.m.message.id, fl.code);
    }
  }

  // The retry delay of failure n (rule 3, 4, 11).
  std::chrono::milliseconds retry_delay(std::uint32_t n, const sink_outcome& out) {
    std::chrono::milliseconds d;
    if (o.backoff_fn) {
      try {
        d = o.backoff_fn(n);
        if (d < 0ms || d > o.backoff.cap) {
          log().warn("outbox relay {}: invalid_backoff: backoff returned {} ms, clamped to [0, {} ms]", owner,
                     d.count(), o.backoff.cap.count());
          d = std::clamp(d, 0ms, o.backoff.cap);
        }
      } catch (...) {
        log().warn("outbox relay {}: backoff_threw: the backoff callback threw; retrying without delay",
                   owner);
        d = 0ms;
      }
    } else {
      d = backoff_delay(n, o.backoff, uniform01());
    }
    if (out.retry_after && *out.retry_after > d) d = *out.retry_after;
    const auto max = std::chrono::duration_cast<std::chrono::milliseconds>(st.options().max_retry_delay);
    return std::min(d, max);
  }

  // The class after the optional classifier (rule 3, 11).
  outcome_class classify(const claimed_message& cm, sink_outcome& out) {
    auto c = out.kind;
    if (o.classifier) {
      try {
        c = o.classifier(cm, out);
      } catch (...) {
        out = sink_outcome::transient("classifier_threw", "the classifier threw");
        return outcome_class::transient;
      }
    }
    if (c != outcome_class::delivered && c != outcome_class::transient && c != outcome_class::permanent) {
      out = sink_outcome::transient("invalid_error_class",
                                    fmt::format("invalid outcome class {}", static_cast<int>(c)));
      return outcome_class::transient;
    }
    if (c != outcome_class::delivered && !valid_failure_code(out.code)) out.code = "sink_failed";
    return c;
  }

  [[nodiscard]] bool scoped(const envelope& e) const {
    return o.mode == serialization::by_topic ||
           (o.mode == serialization::by_ordering_key && !e.ordering_key.empty());
  }

  std::shared_ptr<flight> make_flight(claimed_message cm, steady::time_point asked_at) {
    auto f = std::make_shared<flight>();
    f->m = std::move(cm);
    f->deadline = (asked_at + o.lease_duration).time_since_epoch().count();
    return f;
  }

  // Moves a row out of publishing; false when shutdown abandoned it.
  static bool take(flight& f) {
    int expected = publishing;
    return f.ph.compare_exchange_strong(expected, transition);
  }

  // Publishes one row and records its outcome. Returns the scope's next row
  // when claim-next leased one (rule 9).
  std::shared_ptr<flight> handle(flight& f) {
    const auto& cm = f.m;
    if (!take(f)) return nullptr;  // abandoned at shutdown
    if (f.lost) return nullptr;    // lost while queued for a worker: another relay may hold it
    if (cm.message.claim_count > o.max_claims) {
      dead_letter(f, {"claim_budget_exhausted", fmt::format("claimed {} times, over max_claims {}",
                                                            cm.message.claim_count, o.max_claims)});
      return nullptr;
    }
    if (stopping) {  // shutdown began before the sink was called
      release(f);
      return nullptr;
    }
    f.ph = publishing;  // the sink call may now be abandoned at shutdown
    sink_outcome out;
    const auto started = steady::now();
    try {
      out = sk->publish(cm, f.stop.get_token());
    } catch (const std::exception& e) {
      out = sink_outcome::transient("sink_threw", e.what());
    } catch (...) {
      out = sink_outcome::transient("sink_threw", "the sink threw");
    }
    const auto elapsed = steady::now() - started;
    with_metrics([&](relay_metrics& x) { x.sink_latency.observe(elapsed); });
    if (!take(f)) return nullptr;  // abandoned at shutdown
    if (f.lost) return nullptr;    // rule 2: the outcome of a lost lease is not recorded
    const auto c = classify(cm, out);
    {
      std::lock_guard lock(mu);
      h.sink_ok = c != outcome_class::transient;
      if (c == outcome_class::transient) h.last_sink_error = out.code;
    }
    if (c == outcome_class::delivered) return delivered(f);
    failed(f, c, out);
    return nullptr;
  }

  // Records a permanent or transient failure (rule 3, 10).
  void failed(flight& f, outcome_class c, const sink_outcome& out) {
    const auto& cm = f.m;
    if (c == outcome_class::permanent) {
      dead_letter(f, {out.code, out.message});
      return;
    }
    if (stopping) {  // rule 10: a stop-induced failure consumes no attempt
      release(f);
      return;
    }
    breaker_outcome(outcome_class::transient);
    const std::uint32_t n = cm.message.failure_count + 1;
    if (n >= o.max_attempts) {
      dead_letter(f, {out.code, out.message});
      return;
    }
    const auto delay = retry_delay(n, out);
    if (run_transition(f, "retry", lease_fate::pending, [&](const call_options& co) {
          st.retry(cm.ref, retry_at::after(delay), {out.code, out.message}, co);
        }) == recorded::ok) {
      with_metrics([](relay_metrics& x) { ++x.retried; });
    }
  }

  std::shared_ptr<flight> delivered(flight& f) {
    const auto& cm = f.m;
    std::optional<claimed_message> next;
    recorded r;
    sink_outcome sink_part;
    if (scoped(cm.message) && !sk->records_delivery() && !stopping) {
      const auto asked = steady::now();
      r = run_transition(f, "mark_delivered_and_claim_next", lease_fate::delivered, [&](const call_options& c) {
        next = st.mark_delivered_and_claim_next(cm.ref, o.lease_duration, o.mode, c);
      });
      if (r == recorded::ok && next) {
        auto nf = make_flight(std::move(*next), asked);
        std::lock_guard lock(mu);
        ++m.claimed;
        ++m.delivered;
        flights[nf->m.message.id] = nf;
        m.in_flight = static_cast<std::int64_t>(flights.size());
        breaker_after_delivery_locked();
        return nf;
      }
    } else if (!stopping && (sk->records_delivery() || !scoped(cm.message))) {
      // The worker queues it for the next batch: mark_delivered_batch, or
      // the sink's record_delivered_batch (its writes in the same
      // transaction). An ordered row's successor waits for that record.
      f.deferred = true;
      return nullptr;
    } else {
      r = run_transition(
          f, "mark_delivered", lease_fate::delivered, [&](const call_options& c) { sk->record_delivered(st, cm, c); }, &sink_part);
    }
    if (r == recorded::ok) {
      with_metrics([](relay_metrics& x) { ++x.delivered; });
      breaker_outcome(outcome_class::delivered);
      if (scoped(cm.message)) {
        {
          std::lock_guard lock(mu);
          successor_ready = true;
        }
        cv.notify_all();
      }
      return nullptr;
    }
    if (r == recorded::sink_failed) {  // nothing committed: a failure of the row
      if (!valid_failure_code(sink_part.code)) sink_part.code = "sink_failed";
      failed(f,
             sink_part.kind == outcome_class::permanent ? outcome_class::permanent : outcome_class::transient,
             sink_part);
      return nullptr;
    }
    if (r == recorded::failed) {
      with_metrics([](relay_metrics& x) { ++x.delivery_unrecorded; });
      log().error(
          "outbox relay {}: delivery_unrecorded: {} was published but its delivery could not be recorded; "
          "it is delivered again after its lease expires",
          owner, cm.message.id);
    }
    return nullptr;
  }
  void breaker_after_delivery_locked() {
    consecutive_transient = 0;
    if (m.breaker == breaker_state::half_open) {
      m.breaker = breaker_state::closed;
      breaker_period = o.breaker.open_period;
      probe_out = false;
    }
    h.breaker = m.breaker;
  }

  // ---- workers ----
  void worker() {
    for (;;) {
      std::shared_ptr<flight> f;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !tasks.empty() || session_over; });
        if (tasks.empty()) return;
        f = std::move(tasks.front());
        tasks.pop_front();
        ++busy;
      }
      while (f) {
        std::shared_ptr<flight> next;
        try {
          next = handle(*f);
        } catch (const std::exception& e) {  // containment: nothing escapes a worker
          log().error("outbox relay {}: unexpected error handling {}: {}", owner, f->m.message.id, e.what());
        }
        bool flush = false;
        if (!f->deferred) finish_flight(f);
        {
          std::lock_guard lock(mu);
          if (f->deferred) pending_marks.push_back(f);
          // Flush once no queued row waits for a worker (nothing more is
          // about to join this batch) or a claim's worth is pending.
          flush = !pending_marks.empty() && (tasks.empty() || pending_marks.size() >= claim_batch);
        }
        if (flush) flush_marks();
        f = std::move(next);
      }
      {
        std::lock_guard lock(mu);
        --busy;
      }
      cv.notify_all();
    }
  }

  void finish_flight(const std::shared_ptr<flight>& f) {
    f->ph = done;
    std::lock_guard lock(mu);
    const auto it = flights.find(f->m.message.id);
    if (it != flights.end() && it->second == f) flights.erase(it);
    if (f->probe) probe_out = false;
    m.in_flight = static_cast<std::int64_t>(flights.size());
  }

  // Records every pending delivered row with mark_delivered_batch, one
  // worker at a time; rows deferred meanwhile go in the next round.
  void flush_marks() {
    std::vector<std::shared_ptr<flight>> batch;
    {
      std::lock_guard lock(mu);
      if (flushing || pending_marks.empty()) return;
      flushing = true;
      batch.swap(pending_marks);
      marking = batch.size();
    }
    for (;;) {
      for (std::size_t i = 0; i < batch.size(); i += 1000) {  // the store's limit per call
        std::vector<std::shared_ptr<flight>> part(batch.begin() + static_cast<std::ptrdiff_t>(i),
                                                  batch.begin() + static_cast<std::ptrdiff_t>(std::min(batch.size(), i + 1000)));
        record_marks(part);
      }
      for (const auto& f : batch) finish_flight(f);
      {
        std::lock_guard lock(mu);
        batch.clear();
        batch.swap(pending_marks);
        marking = batch.size();
        if (batch.empty()) flushing = false;
      }
      cv.notify_all();  // capacity freed
      if (batch.empty()) return;
    }
  }

  // One batch of delivered rows recorded: by the sink when it records
  // deliveries itself, else mark_delivered_batch.
  std::vector<sink::batch_record> record_batch(const std::vector<std::shared_ptr<flight>>& rows,
                                               const call_options& c) {
    if (sk->records_delivery()) {
      std::vector<const claimed_message*> ms;
      ms.reserve(rows.size());
      for (const auto& f : rows) ms.push_back(&f->m);
      return sk->record_delivered_batch(st, ms, c);
    }
    std::vector<lease_ref> refs;
    refs.reserve(rows.size());
    for (const auto& f : rows) refs.push_back(f->m.ref);
    const auto marked = st.mark_delivered_batch(refs, c);
    std::vector<sink::batch_record> out(marked.size());
    for (std::size_t i = 0; i < marked.size(); ++i) out[i].delivered = marked[i];
    return out;
  }

  // record_batch under transition_timeout, retried on unavailable;
  // an in_doubt attempt is resolved per row by re-reading it (rule 7), as
  // run_transition does for one row.
  void record_marks(const std::vector<std::shared_ptr<flight>>& rows) {
    std::vector<std::shared_ptr<flight>> todo;
    for (const auto& f : rows) {
      if (!f->lost) todo.push_back(f);  // rule 2: a lost lease's outcome is not recorded
    }
    const auto deadline = steady::now() + o.transition_timeout;
    auto pause = 20ms;
    bool doubt = false;
    const auto delivered_one = [&] {
      with_metrics([](relay_metrics& x) { ++x.delivered; });
      breaker_outcome(outcome_class::delivered);
    };
    while (!todo.empty()) {
      try {
        if (doubt) {
          std::vector<std::shared_ptr<flight>> again;
          for (const auto& f : todo) {
            const lease_fate now = st.check_lease(f->m.ref, call_options{deadline, {}});
            if (now == lease_fate::delivered) {
              delivered_one();
              if (scoped(f->m.message)) {
                std::lock_guard lock(mu);
                successor_ready = true;  // flush_marks notifies
              }
            } else if (now == lease_fate::held) {
              again.push_back(f);  // unchanged and still ours: the attempt did not commit
            } else {
              mark_lost(*f, "mark_delivered");
            }
          }
          store_ok();
          todo.swap(again);
          doubt = false;
          continue;
        }
        const auto marked = record_batch(todo, call_options{deadline, {}});
        store_ok();
        bool ordered = false;
        for (std::size_t i = 0; i < todo.size(); ++i) {
          auto& f = *todo[i];
          if (i < marked.size() && marked[i].delivered) {
            delivered_one();
            ordered = ordered || scoped(f.m.message);
          } else if (i < marked.size() && marked[i].failure) {
            auto part = *marked[i].failure;  // nothing of the row committed: a failure of the row
            if (!valid_failure_code(part.code)) part.code = "sink_failed";
            failed(f, part.kind == outcome_class::permanent ? outcome_class::permanent : outcome_class::transient,
                   part);
          } else {
            mark_lost(f, "mark_delivered");
          }
        }
        if (ordered) {
          std::lock_guard lock(mu);
          successor_ready = true;  // flush_marks notifies
        }
        return;
      } catch (const error& e) {
        store_error("mark_delivered", e);
        // A sink that records row by row may have committed some rows
        // before an unavailable one: re-read them all, as for in_doubt.
        if (e.code() == errc::in_doubt || (e.code() == errc::unavailable && sk->records_delivery())) doubt = true;
        if (e.code() != errc::unavailable && e.code() != errc::in_doubt) break;
      } catch (const std::exception& e) {
        store_error("mark_delivered", e);
        break;
      }
      const auto now = steady::now();
      if (now >= deadline) break;
      std::this_thread::sleep_for(std::min<steady::duration>(pause, deadline - now));
      pause = std::min(pause * 2, 500ms);
    }
    for (const auto& f : todo) {
      with_metrics([](relay_metrics& x) { ++x.delivery_unrecorded; });
      log().error(
          "outbox relay {}: delivery_unrecorded: {} was published but its delivery could not be recorded; "
          "it is delivered again after its lease expires",
          owner, f->m.message.id);
    }
  }

  // ---- renewal (rule 2) ----
  void renewer(const std::stop_token& stop) {
    bool failed = false;
    while (!stop.stop_requested()) {
      sleep_for(failed ? std::min<std::chrono::milliseconds>(renew, 200ms) : renew, stop);
      if (stop.stop_requested()) break;
      std::vector<std::shared_ptr<flight>> held;
      {
        std::lock_guard lock(mu);
        for (const auto& [id, f] : flights) {
          if (!f->lost && f->ph != done && f->ph != abandoned) held.push_back(f);
        }
      }
      failed = false;
      for (std::size_t i = 0; i < held.size(); i += 1000) {
        const auto end = std::min(held.size(), i + 1000);
        std::vector<lease_ref> refs;
        refs.reserve(end - i);
        for (auto j = i; j < end; ++j) refs.push_back(held[j]->m.ref);
        const auto asked = steady::now();
        try {
          const auto r = st.extend_leases(refs, o.lease_duration,
                                          call_options{asked + std::min(renew, o.transition_timeout), {}});
          store_ok();
          for (auto j = i; j < end; ++j) {
            auto& f = *held[j];
            if (r.at(j - i)) {
              f.deadline = (asked + o.lease_duration).time_since_epoch().count();
            } else if (f.ph == publishing) {  // a transition reports its own loss
              mark_lost(f, "renewal");
            }
          }
        } catch (const std::exception& e) {
          failed = true;
          store_error("extend_leases", e);
        }
      }
      // A lease whose deadline passed without renewal is lost (its sink call stops).
      const auto now = steady::now().time_since_epoch().count();
      for (const auto& f : held) {
        if (f->ph == publishing && f->deadline.load() <= now)
          mark_lost(*f, "deadline passed without renewal");
      }
    }
  }

  // ---- claims (rule 1, 5, 8) ----
  // One claim round; returns {asked, got}.
  std::pair<std::size_t, std::size_t> claim_round() {
    std::size_t asked = 0;
    bool probe = false;
    {
      std::lock_guard lock(mu);
      asked = claim_allowance_locked(free_capacity_locked());
      probe = m.breaker == breaker_state::half_open;
      if (asked == 0) return {0, 0};
      ++m.claims;
    }
    const auto started = steady::now();
    std::vector<claimed_message> got =
        st.claim(owner, asked, o.lease_duration, o.mode, call_options{started + o.transition_timeout, {}});
    store_ok();
    if (got.size() > asked) {
      log().error("outbox relay {}: claim_batch_overflow: asked for {} rows, got {}; releasing all", owner,
                  asked, got.size());
      for (auto& cm : got) {
        auto f = make_flight(std::move(cm), started);
        f->ph = transition;
        release(*f);
      }
      return {asked, 0};
    }
    {
      std::lock_guard lock(mu);
      for (auto& cm : got) {
        auto f = make_flight(std::move(cm), started);
        if (probe) {
          f->probe = true;
          probe_out = true;
        }
        flights[f->m.message.id] = f;
        tasks.push_back(std::move(f));
        ++m.claimed;
      }
      m.in_flight = static_cast<std::int64_t>(flights.size());
    }
    cv.notify_all();
    return {asked, got.size()};
  }

  // ---- sessions ----
  std::vector<std::thread> workers;
  std::jthread renewer_thread, reporter_thread;

  void begin_session() {
    {
      std::lock_guard lock(mu);
      session_over = false;
      h.running = true;
    }
    stopping = false;
    workers.clear();
    for (std::size_t i = 0; i < threads; ++i) workers.emplace_back([this] { worker(); });
    renewer_thread = std::jthread([this](std::stop_token s) { renewer(s); });
    if (o.notify) {
      try {
        subscription = st.subscribe_changes([this](bool) {
          {
            std::lock_guard lock(mu);
            woken = true;
          }
          cv.notify_all();
        });
      } catch (const std::exception& e) {  // polling still works
        store_error("subscribe_changes", e);
      }
    }
    if (o.on_metrics) {
      reporter_thread = std::jthread([this](std::stop_token s) {
        while (!s.stop_requested()) {
          sleep_for(o.metrics_interval, s);
          if (!s.stop_requested()) report();
        }
      });
    }
  }

  void report() {
    try {
      o.on_metrics(snapshot());
    } catch (const std::exception& e) {
      log().warn("outbox relay {}: on_metrics threw: {}", owner, e.what());
    } catch (...) {
      log().warn("outbox relay {}: on_metrics threw", owner);
    }
  }

  // Ends a session; graceful (rule 10) when stop was requested.
  void end_session(bool graceful) {
    subscription.reset();  // no more wake-ups once claiming has stopped
    std::vector<std::shared_ptr<flight>> leftover;
    {
      std::unique_lock lock(mu);
      if (graceful) {
        stopping = true;
        for (const auto& [id, f] : flights) f->stop.request_stop();
        cv.wait_for(lock, o.shutdown_grace, [&] { return busy == 0 && tasks.empty(); });
        for (const auto& [id, f] : flights) {
          int expected = publishing;
          if (f->ph.compare_exchange_strong(expected, abandoned)) leftover.push_back(f);
        }
      } else {
        cv.wait(lock, [&] { return busy == 0 && tasks.empty(); });
      }
    }
    flush_marks();  // normally empty: every worker flushes before it goes idle
    // Sinks still running after the grace: their rows were not published (as far as we know).
    for (const auto& f : leftover) {
      log().warn("outbox relay {}: releasing {}: its sink call did not end within shutdown_grace", owner,
                 f->m.message.id);
      release(*f);
      std::lock_guard lock(mu);
      const auto it = flights.find(f->m.message.id);
      if (it != flights.end() && it->second == f) flights.erase(it);
      m.in_flight = static_cast<std::int64_t>(flights.size());
    }
    {
      std::lock_guard lock(mu);
      session_over = true;
    }
    cv.notify_all();
    for (auto& w : workers) w.join();  // sinks MUST observe their stop token
    workers.clear();
    renewer_thread.request_stop();
    sleep_cv.notify_all();
    if (renewer_thread.joinable()) renewer_thread.join();
    if (reporter_thread.joinable()) {
      reporter_thread.request_stop();
      reporter_thread.join();
    }
    {
      std::lock_guard lock(mu);
      h.running = false;
    }
    if (o.on_metrics) report();
  }

  [[nodiscard]] relay_metrics snapshot() const {
    std::lock_guard lock(mu);
    auto x = m;
    x.in_flight = static_cast<std::int64_t>(flights.size());
    return x;
  }

  // run(): until stop or stop(), then a graceful shutdown. running is set.
  void run_until(const std::stop_token& stop) {
    std::stop_token own;
    {
      std::lock_guard lock(stop_mu);
      own = stop_src.get_token();
    }
    std::stop_source both;
    std::stop_callback a(stop, [&] { both.request_stop(); });
    std::stop_callback b(own, [&] { both.request_stop(); });
    log().info("outbox relay {} started (max_in_flight {}, sink_concurrency {}, claim_batch {}, lease {} ms)",
               owner, o.max_in_flight, threads, claim_batch, o.lease_duration.count());
    begin_session();
    loop(both.get_token());
    end_session(true);
    log().info("outbox relay {} stopped", owner);
    running = false;
  }

  // The main loop of run().
  void loop(const std::stop_token& stop) {
    spool::detail::db_backoff backoff(100ms, 30s);
    bool more = true;  // the last claim got all it asked for (the first claim goes at once)
    while (!stop.stop_requested()) {
      {
        std::unique_lock lock(mu);
        if (!more) {
          // Poll wait, ended early only by a change notification (rule 8);
          // capacity freed does not end it.
          if (cv.wait_for(lock, stop, o.poll_interval, [&] { return woken || successor_ready; }) && woken)
            ++m.wakeups;
        }
        woken = false;
        successor_ready = false;
        // Wait for capacity, and for the breaker to allow a claim.
        for (;;) {
          if (stop.stop_requested()) break;
          if (free_capacity_locked() > 0) {
            if (m.breaker == breaker_state::closed) break;
            if (m.breaker == breaker_state::open) {
              const auto now = steady::now();
              if (now >= open_until) break;
              (void)cv.wait_for(lock, stop, std::min<steady::duration>(open_until - now, o.poll_interval),
                                [] { return false; });
              continue;
            }
            if (!probe_out) break;
            // Half-open with the probe out: wait for its outcome.
            (void)cv.wait_for(lock, stop, o.poll_interval, [&] { return !probe_out; });
            continue;
          }
          // Full: wait for a slot to free.
          (void)cv.wait_for(lock, stop, o.poll_interval, [&] { return free_capacity_locked() > 0; });
        }
      }
      if (stop.stop_requested()) break;
      try {
        const auto [asked, got] = claim_round();
        backoff.reset();
        more = asked > 0 && got == asked;
      } catch (const std::exception& e) {
        more = false;
        store_error("claim", e);
        sleep_for(backoff.next(), stop);
      }
    }
  }
};

relay::relay(store& s, std::shared_ptr<sink> sink, relay_options options)
    : impl_(std::make_unique<impl>(s, std::move(sink), std::move(options))) {}

relay::~relay() {
  try {
    stop();
  } catch (...) {
  }
}

void relay::run(std::stop_token stop) {
  if (impl_->running.exchange(true))
    throw error(errc::invalid_state, "relay: already running", "already_running");
  {
    std::lock_guard lock(impl_->stop_mu);
    impl_->stop_src = std::stop_source();
  }
  impl_->run_until(stop);
}

void relay::start() {
  if (impl_->running.exchange(true))
    throw error(errc::invalid_state, "relay: already running", "already_running");
  if (impl_->background.joinable()) impl_->background.join();
  {
    std::lock_guard lock(impl_->stop_mu);
    impl_->stop_src = std::stop_source();
  }
  impl_->background = std::thread([this] { impl_->run_until({}); });
}

void relay::stop() {
  {
    std::lock_guard lock(impl_->stop_mu);
    impl_->stop_src.request_stop();
  }
  impl_->sleep_cv.notify_all();
  impl_->cv.notify_all();
  if (impl_->background.joinable() && impl_->background.get_id() != std::this_thread::get_id()) {
    impl_->background.join();
    return;
  }
  // run() on another thread: wait for its shutdown to end.
  while (impl_->running) std::this_thread::sleep_for(5ms);
}

std::size_t relay::run_once() {
  if (impl_->running.exchange(true))
    throw error(errc::invalid_state, "relay: already running", "already_running");
  impl_->begin_session();
  std::size_t got = 0;
  try {
    got = impl_->claim_round().second;
  } catch (const std::exception& e) {
    impl_->store_error("claim", e);
  }
  impl_->end_session(false);
  impl_->running = false;
  return got;
}

relay_metrics relay::metrics() const { return impl_->snapshot(); }

relay_health relay::health() const {
  std::lock_guard lock(impl_->mu);
  auto h = impl_->h;
  h.breaker = impl_->m.breaker;
  return h;
}

const std::string& relay::owner() const noexcept { return impl_->owner; }
const relay_options& relay::options() const noexcept { return impl_->o; }

}  // namespace spool::outbox
