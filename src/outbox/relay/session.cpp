// A relay session: its workers and services started, and ended gracefully
// (outbox.md §7 rule 10) or after one claim round.
#include <fmt/format.h>

#include <thread>
#include <vector>

#include "common/log.hpp"
#include "outbox/relay/impl.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

void relay::impl::begin_session() {
  {
    std::lock_guard lock(mu);
    session_over = false;
    h.running = true;
  }
  stopping = false;
  workers.start(threads, [this](const std::stop_token&) { worker(); });
  renewer_service.start(renew, [this](const std::stop_token&) { return std::optional(renew_round()); });
  fencer_service.start(renew, [this](const std::stop_token&) { return fence_round(); });
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
    reporter_service.start(o.metrics_interval, [this](const std::stop_token&) {
      report();
      return std::optional(o.metrics_interval);
    });
  }
}

void relay::impl::report() {
  try {
    o.on_metrics(snapshot());
  } catch (const std::exception& e) {
    log().warn("outbox relay {}: on_metrics threw: {}", owner, e.what());
  } catch (...) {
    log().warn("outbox relay {}: on_metrics threw", owner);
  }
}

// Ends a session; graceful (rule 10) when stop was requested.
void relay::impl::end_session(bool graceful) {
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
  workers.join();  // sinks MUST observe their stop token
  renewer_service.stop();
  fencer_service.stop();
  reporter_service.stop();
  {
    std::lock_guard lock(mu);
    h.running = false;
  }
  if (o.on_metrics) report();
}

relay_metrics relay::impl::snapshot() const {
  std::lock_guard lock(mu);
  auto x = m;
  x.in_flight = static_cast<std::int64_t>(flights.size());
  return x;
}

// run(): until stop or stop(), then a graceful shutdown. running is set.
void relay::impl::run_until(const std::stop_token& stop) {
  std::stop_token own;
  {
    std::lock_guard lock(stop_mu);
    own = stop_src.get_token();
  }
  std::stop_source both;
  std::stop_callback a(stop, [&] { both.request_stop(); });
  std::stop_callback b(own, [&] { both.request_stop(); });
  log().info(
      "outbox relay {} started (max_in_flight {}, sink_concurrency {}, claim_batch {}, claimers {}, lease {} "
      "ms)",
      owner, o.max_in_flight, threads, claim_batch, claimers, o.lease_duration.count());
  // The claims, the renewals and each sink call's record hold a connection
  // at once: open them now, not as the first envelopes arrive (a connect
  // costs milliseconds; W4's first messages waited 30-50 ms for them).
  // Before the session, so that the listener's first "look now" is not
  // taken by the first claim before the loop waits.
  (void)st.warm(threads + claimers + 1);
  begin_session();
  {
    // The other claimers; each ends with the token, and the session ends
    // only after all have (none may claim into a finished session): the
    // threads are joined at the end of this scope.
    std::vector<std::jthread> more;
    for (std::size_t i = 1; i < claimers; ++i) more.emplace_back([this, t = both.get_token()] { loop(t); });
    loop(both.get_token());
  }
  end_session(true);
  log().info("outbox relay {} stopped", owner);
  running = false;
}

}  // namespace spool::outbox
