// Lease renewal (outbox.md §7 rule 2): every held lease extended each
// renew_interval, in calls of at most 1,000; a lease not renewed in time is lost.
#include <algorithm>

#include "outbox/relay/impl.hpp"

#include "common/log.hpp"
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
  // A lease whose deadline passed without renewal is lost (its sink call stops).
  const auto now = steady::now().time_since_epoch().count();
  for (const auto& f : held) {
    if (f->ph == publishing && f->deadline.load() <= now)
      mark_lost(*f, "deadline passed without renewal");
  }
  return failed ? std::min<std::chrono::milliseconds>(renew, 200ms) : renew;
}

}  // namespace spool::outbox
