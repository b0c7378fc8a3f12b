// spool::latency_histogram — the latency histograms of every runtime's
// metrics snapshot (handler latency in worker pools, sink latency in relays).
// Fixed bucket bounds, so snapshots from different processes add up and map
// one to one onto a Prometheus histogram (docs/METRICS.md).
// Thread safety: a plain value; the runtimes copy it under their own lock.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace spool {

struct latency_histogram {
  // Upper bounds of the buckets in seconds (le="…"); one more bucket is +Inf.
  static constexpr std::array<double, 14> bounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                 0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};
  // Observations per bucket, not cumulative: buckets[i] counts values in
  // (bounds[i-1], bounds[i]]; buckets.back() those above bounds.back().
  std::array<std::uint64_t, bounds.size() + 1> buckets{};
  std::uint64_t count = 0;
  double sum_seconds = 0;

  void observe(std::chrono::nanoseconds d) noexcept;
  latency_histogram& operator+=(const latency_histogram& other) noexcept;
  // Observations at or below bounds[i] (Prometheus' cumulative bucket).
  [[nodiscard]] std::uint64_t cumulative(std::size_t i) const noexcept;
  friend bool operator==(const latency_histogram&, const latency_histogram&) = default;
};

}  // namespace spool
