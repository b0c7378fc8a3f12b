// The runtimes' background-service thread, their clock and stop-aware sleep.
#include "runtime/service.hpp"

#include <condition_variable>
#include <mutex>

namespace spool::detail {

bool sleep_for(std::chrono::milliseconds d, const std::stop_token& stop) {
  // A condition_variable_any waiting with a stop_token is woken by the stop
  // request itself, so no one needs to notify this private pair.
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  (void)cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

namespace {
class steady_clock_with_stop final : public clock {
 public:
  [[nodiscard]] time_point now() const override { return std::chrono::steady_clock::now(); }
  bool sleep_for(std::chrono::milliseconds d, const std::stop_token& stop) override {
    return spool::detail::sleep_for(d, stop);
  }
};
}  // namespace

clock& real_clock() noexcept {
  static steady_clock_with_stop instance;  // stateless, so sharing it shares nothing
  return instance;
}

void periodic_service::start(std::chrono::milliseconds first_wait, step_fn step) {
  thread_ = std::jthread([this, first_wait, step = std::move(step)](const std::stop_token& stop) {
    auto wait = first_wait;
    while (clock_->sleep_for(wait, stop)) {
      const auto next = step(stop);
      if (!next) return;
      wait = *next;
    }
  });
}

void periodic_service::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

}  // namespace spool::detail
