// The relay's circuit breaker (outbox.md §7 rule 5): consecutive transient
// failures open it; after open_period one probe row tells whether to close.
#include "outbox/relay/impl.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

// ---- breaker (rule 5) ----
// How many rows a claim may ask for now (0: none), given free capacity.
std::size_t relay::impl::claim_allowance_locked(std::size_t free) {
  if (m.breaker == breaker_state::open) {
    if (steady::now() < open_until) return 0;
    m.breaker = breaker_state::half_open;
    probe_out = false;
    log().info("outbox relay {}: breaker half-open, claiming one probe row", owner);
  }
  if (m.breaker == breaker_state::half_open) return probe_out ? 0 : std::min<std::size_t>(free, 1);
  return std::min(free, claim_batch);
}

void relay::impl::breaker_outcome(outcome_class c) {
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

void relay::impl::open_locked() {
  m.breaker = breaker_state::open;
  probe_out = false;
  open_until = steady::now() + breaker_period;
  log().warn("outbox relay {}: breaker open for {} ms after {} consecutive transient failures", owner,
             breaker_period.count(), consecutive_transient);
}

void relay::impl::breaker_after_delivery_locked() {
  consecutive_transient = 0;
  if (m.breaker == breaker_state::half_open) {
    m.breaker = breaker_state::closed;
    breaker_period = o.breaker.open_period;
    probe_out = false;
  }
  h.breaker = m.breaker;
}

}  // namespace spool::outbox
