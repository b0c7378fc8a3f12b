// Lease renewal (outbox.md §7 rule 2): every held lease extended each
// renew_interval, in calls of at most 1,000; a lease not renewed in time is
// lost one renew_interval before it could expire (fence_round).
#include <algorithm>

#include "common/log.hpp"
#include "outbox/relay/impl.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

std::chrono::milliseconds relay::impl::renew_round() {
  std::vector<std::shared_ptr<flight>> held;
  {
    std::lock_guard lock(mu);
    for (const auto& [id, f] : flights) {
      if (!f->lost && f->ph != done && f->ph != abandoned) held.push_back(f);
    }
  }
  bool failed = false;
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
  (void)fence_round();
  return failed ? std::min<std::chrono::milliseconds>(renew, 200ms) : renew;
}

std::optional<std::chrono::milliseconds> relay::impl::fence_round() {
  std::vector<std::shared_ptr<flight>> held;
  {
    std::lock_guard lock(mu);
    for (const auto& [id, f] : flights) {
      if (!f->lost && f->ph == publishing) held.push_back(f);
    }
  }
  // One renew_interval of margin (renew ≤ lease_duration / 2): the time for
  // the sink call to stop before the lease can expire on the server.
  const auto margin = std::chrono::duration_cast<steady::duration>(renew).count();
  const auto now = steady::now().time_since_epoch().count();
  auto next = std::chrono::duration_cast<steady::duration>(renew).count();
  for (const auto& f : held) {
    const auto fence_at = f->deadline.load() - margin;
    if (fence_at <= now) {
      mark_lost(*f, "no renewal got through in time: its lease could expire");
    } else {
      next = std::min(next, fence_at - now);
    }
  }
  return std::max(std::chrono::ceil<std::chrono::milliseconds>(steady::duration(next)), 1ms);
}

}  // namespace spool::outbox
