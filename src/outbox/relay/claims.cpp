// The claim loop (outbox.md §7 rules 1, 5, 8): claims as capacity and the
// breaker allow, waits for a notification or the poll interval when idle.
#include <fmt/format.h>

#include <algorithm>

#include "common/log.hpp"
#include "outbox/relay/impl.hpp"
#include "runtime/db_backoff.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

// ---- claims (rule 1, 5, 8) ----
// One claim round; returns {asked, got}.
std::pair<std::size_t, std::size_t> relay::impl::claim_round() {
  std::size_t asked = 0;
  std::uint64_t probe = 0;  // this round's probe number, when half-open
  {
    std::lock_guard lock(mu);
    asked = claim_allowance_locked(free_capacity_locked());
    if (asked == 0) return {0, 0};
    if (m.breaker == breaker_state::half_open) probe = ++probes;
    ++m.claims;
    // Held for this round until its rows are flights, so that another
    // claimer neither exceeds max_in_flight nor asks for a second probe.
    reserved += asked;
    if (probe != 0) probe_out = true;
  }
  // The round ends without flights: its rows and its probe are free again.
  const auto unreserve = [&] {
    {
      std::lock_guard lock(mu);
      reserved -= asked;
      if (probe != 0 && probe == probes) probe_out = false;
    }
    cv.notify_all();
  };
  const auto started = steady::now();
  std::vector<claimed_message> got;
  try {
    got = st.claim(owner, asked, o.lease_duration, o.mode, call_options{started + o.transition_timeout, {}});
  } catch (...) {
    unreserve();
    throw;
  }
  store_ok();
  if (got.empty()) {
    unreserve();
    return {asked, 0};
  }
  if (got.size() > asked) {
    log().error("outbox relay {}: claim_batch_overflow: asked for {} rows, got {}; releasing all", owner,
                asked, got.size());
    unreserve();
    for (auto& cm : got) {
      auto f = make_flight(std::move(cm), started);
      f->ph = transition;
      release(*f);
    }
    return {asked, 0};
  }
  {
    std::lock_guard lock(mu);
    reserved -= asked;
    for (auto& cm : got) {
      auto f = make_flight(std::move(cm), started);
      f->probe = probe;  // probe_out stays set until its outcome
      flights[f->m.message.id] = f;
      tasks.push_back(std::move(f));
      ++m.claimed;
    }
    m.in_flight = static_cast<std::int64_t>(flights.size());
  }
  cv.notify_all();
  return {asked, got.size()};
}

// The main loop of run().
void relay::impl::loop(const std::stop_token& stop) {
  spool::detail::db_backoff backoff(100ms, 30s);
  bool more = true;  // the last claim got all it asked for (the first claim goes at once)
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mu);
      if (!more) {
        // Poll wait, ended early only by a change notification (rule 8);
        // capacity freed does not end it.
        (void)cv.wait_for(lock, stop, o.poll_interval, [&] { return woken || successor_ready; });
      }
      // Counted whether or not a wait was under way: the listener's first
      // "look now" can land before the loop's first wait, and is still the
      // sign that the relay listens.
      if (woken) ++m.wakeups;
      woken = false;
      successor_ready = false;
      // Wait for capacity, and for the breaker to allow a claim.
      for (;;) {
        if (stop.stop_requested()) break;
        if (claimable_locked()) {
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
        // Full, or only part of a claim free while other work is under way:
        // wait for capacity.
        (void)cv.wait_for(lock, stop, o.poll_interval, [&] { return claimable_locked(); });
      }
    }
    if (stop.stop_requested()) break;
    try {
      const auto [asked, got] = claim_round();
      backoff.reset();
      // A round that asked for nothing (capacity taken between the wait and
      // the round) says nothing about the backlog: the wait above comes again.
      if (asked > 0) more = got == asked;
    } catch (const std::exception& e) {
      more = false;
      store_error("claim", e);
      (void)spool::detail::sleep_for(backoff.next(), stop);
    }
  }
}

}  // namespace spool::outbox
