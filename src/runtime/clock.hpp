// The time a runtime service reads and waits on. Production services use
// real_clock(): the steady clock, and a wait that a stop request ends at once.
// A test passes its own clock to drive a service's schedule without waiting.
#pragma once

#include <chrono>
#include <stop_token>

namespace spool::detail {

// Thread safety: an implementation is called from the service's own thread
// and must be safe for that; real_clock() is safe from any thread.
class clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  clock() = default;
  clock(const clock&) = delete;
  clock& operator=(const clock&) = delete;
  virtual ~clock() = default;

  [[nodiscard]] virtual time_point now() const = 0;
  // Waits for d, or until stop is requested. Returns false when stopped.
  virtual bool sleep_for(std::chrono::milliseconds d, const std::stop_token& stop) = 0;
};

// The steady clock with a stop-aware wait. Stateless: one shared instance.
clock& real_clock() noexcept;

}  // namespace spool::detail
