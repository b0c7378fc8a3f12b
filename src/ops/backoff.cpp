// The retry curve of op-queue.md §7.3 (the database-error backoff is runtime/db_backoff).
#include <algorithm>
#include <cmath>
#include <random>

#include "runtime/retry_curve.hpp"
#include "spool/ops/worker_pool.hpp"

namespace spool::ops {

std::chrono::milliseconds backoff_delay(std::int32_t attempts, const retry_policy& p, double u) {
  const double cap = static_cast<double>(p.cap.count());
  const double raw = spool::detail::exponential_delay(attempts, static_cast<double>(p.base.count()), p.multiplier, cap);
  const double factor = 1.0 - p.jitter + 2.0 * p.jitter * std::clamp(u, 0.0, 1.0);
  const double ms = std::min(cap, raw * factor);
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(std::max(0.0, ms))));
}

}  // namespace spool::ops
