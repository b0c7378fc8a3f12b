#include "runtime/db_backoff.hpp"

#include <algorithm>

namespace spool::detail {

std::chrono::milliseconds db_backoff::next() {
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  const auto base = current_;
  current_ = std::min(max_, current_ * 2);
  const double ms = static_cast<double>(base.count()) * jitter(rng_);
  return std::min(max_, std::chrono::milliseconds(static_cast<std::int64_t>(ms)));
}

}  // namespace spool::detail
