// The database-error backoff every runtime shares (op-queue.md §7.2; the
// relay and the consumer use the same curve): it starts at `start`, doubles
// per consecutive error up to `max`, with ±20 % jitter, and is reset after a
// success. Thread safety: one instance per loop; not shared.
#pragma once

#include <chrono>
#include <random>

namespace spool::detail {

class db_backoff {
 public:
  db_backoff(std::chrono::milliseconds start, std::chrono::milliseconds max)
      : start_(start), max_(max), current_(start), rng_(std::random_device{}()) {}
  // The wait after one more consecutive error.
  std::chrono::milliseconds next();
  void reset() { current_ = start_; }

 private:
  std::chrono::milliseconds start_, max_, current_;
  std::mt19937_64 rng_;
};

}  // namespace spool::detail
