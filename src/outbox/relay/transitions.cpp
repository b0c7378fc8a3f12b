// A held lease's transitions (outbox.md §7 rule 7), bounded by
// transition_timeout and resolved by re-reading the row when in doubt, and the
// bookkeeping of store errors and lost leases.
#include "outbox/relay/impl.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

void relay::impl::store_error(std::string_view what, const std::exception& e) {
  {
    std::lock_guard lock(mu);
    ++m.store_errors;
    h.store_ok = false;
    h.last_store_error = fmt::format("{}: {}", what, e.what());
  }
  log().warn("outbox relay {}: {} failed: {}", owner, what, e.what());
}

void relay::impl::store_ok() {
  std::lock_guard lock(mu);
  h.store_ok = true;
}

// Marks a lease lost once; asks its sink call to stop.
void relay::impl::mark_lost(flight& f, std::string_view why) {
  if (f.lost.exchange(true)) return;
  f.stop.request_stop();
  with_metrics([](relay_metrics& x) { ++x.lease_lost; });
  log().warn("outbox relay {}: lease of {} lost ({})", owner, f.m.message.id, why);
}

// Runs fn under transition_timeout, independent of stop, retried on
// unavailable. An in_doubt attempt is resolved by re-reading the row
// (rule 7): showing `committed` it took effect; still held by this lease it
// is repeated; anything else means the lease is gone.
relay::impl::recorded relay::impl::run_transition(flight& f, std::string_view what, lease_fate committed,
                                                  const std::function<void(const call_options&)>& fn,
                                                  sink_outcome* sink_part) {
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

void relay::impl::release(flight& f) {
  if (run_transition(f, "release_lease", lease_fate::pending, [&](const call_options& c) { st.release_lease(f.m.ref, c); }) ==
      recorded::ok) {
    with_metrics([](relay_metrics& x) { ++x.released; });
  }
}

void relay::impl::dead_letter(flight& f, failure fl) {
  if (run_transition(f, "dead_letter", lease_fate::dead, [&](const call_options& c) { st.dead_letter(f.m.ref, fl, c); }) ==
      recorded::ok) {
    with_metrics([](relay_metrics& x) { ++x.dead_lettered; });
    log().warn("outbox relay {}: dead-lettered {} ({})", owner, f.m.message.id, fl.code);
  }
}

}  // namespace spool::outbox
