// What every runtime's background service shares (the consumer's keeper, the
// relay's renewer and reporter, the worker pool's heartbeats, rescuer and
// reporter): a thread of its own, a clock, and a sleep that a stop request
// ends at once, so stopping a runtime never waits out an interval.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <thread>

#include "runtime/clock.hpp"

namespace spool::detail {

// Waits for d, or until stop is requested. Returns false when stopped.
// Thread-safe: each call waits on its own.
bool sleep_for(std::chrono::milliseconds d, const std::stop_token& stop);

// A background service: one thread that waits, runs step, and waits again for
// as long as step returned, until stopped or until step returns nullopt. The
// first wait is first_wait. A stop request ends a wait at once; a running
// step finishes first (step may watch the token it is given). The waits go
// through the service's clock (real_clock() unless one is given).
// Thread safety: start() and stop() are called by the service's owner, from
// one thread at a time; stop() is idempotent and the destructor calls it.
class periodic_service {
 public:
  using step_fn = std::function<std::optional<std::chrono::milliseconds>(const std::stop_token&)>;

  periodic_service() = default;
  // Precondition: c outlives the service.
  explicit periodic_service(clock& c) : clock_(&c) {}
  periodic_service(const periodic_service&) = delete;
  periodic_service& operator=(const periodic_service&) = delete;
  ~periodic_service() { stop(); }

  // Starts the thread. Precondition: not running (stop() first).
  void start(std::chrono::milliseconds first_wait, step_fn step);
  // Asks the thread to stop and joins it; a no-op when not running.
  void stop();
  // The clock the service waits on; steps read their time from it.
  [[nodiscard]] clock& time() const noexcept { return *clock_; }

 private:
  clock* clock_ = &real_clock();
  std::jthread thread_;
};

}  // namespace spool::detail
