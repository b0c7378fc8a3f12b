// Internal: the database-error backoff of op-queue.md §7.2 (starts at
// poll_interval, doubles per consecutive error up to max_db_backoff, ±20 %
// jitter, reset after a success) and last_error truncation.
#pragma once

#include <chrono>
#include <random>
#include <string>
#include <string_view>

namespace spool::ops::detail {

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

}  // namespace spool::ops::detail
