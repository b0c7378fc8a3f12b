// The one exponential curve every retry delay of Spool follows: the
// consumer's nack delay, the op queue's retry policy and the relay's backoff
// each add their own documented jitter on top of it. Pure: thread-safe.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace spool::detail {

// base × multiplier^(n − 1) for the n-th failure (n < 1 counts as 1), capped
// at cap; 0 when base or cap is not positive. Units are the caller's.
[[nodiscard]] inline double exponential_delay(std::int64_t n, double base, double multiplier, double cap) noexcept {
  if (base <= 0 || cap <= 0) return 0;
  const double steps = static_cast<double>(std::max<std::int64_t>(n, 1) - 1);
  const double raw = base * std::pow(multiplier, steps);  // +inf past the double range, then capped
  return std::isnan(raw) ? cap : std::min(raw, cap);
}

}  // namespace spool::detail
