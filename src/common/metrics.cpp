#include "spool/metrics.hpp"

#include <algorithm>

namespace spool {

void latency_histogram::observe(std::chrono::nanoseconds d) noexcept {
  const double s = std::chrono::duration<double>(d).count();
  // lower_bound: a value equal to a bound belongs to that bound's bucket (le).
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), s);
  ++buckets[static_cast<std::size_t>(it - bounds.begin())];
  ++count;
  sum_seconds += s;
}

latency_histogram& latency_histogram::operator+=(const latency_histogram& other) noexcept {
  for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] += other.buckets[i];
  count += other.count;
  sum_seconds += other.sum_seconds;
  return *this;
}

std::uint64_t latency_histogram::cumulative(std::size_t i) const noexcept {
  std::uint64_t n = 0;
  for (std::size_t j = 0; j <= i && j < buckets.size(); ++j) n += buckets[j];
  return n;
}

}  // namespace spool
