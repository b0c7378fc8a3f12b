// The worker pool tests' fixture (worker_pool_test.cpp,
// worker_pool_drain_test.cpp): a one-shot latch for handlers to signal the
// test, and pool options scaled for tests. In a named namespace, so that both
// files share one fixture type for the parameterised suite.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <string>

#include "ops_fixture.hpp"
#include "spool/ops/worker_pool.hpp"

namespace spool::test {

// A one-shot signal between threads.
class latch_flag {
 public:
  void set() {
    {
      std::lock_guard lock(m_);
      set_ = true;
    }
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = 20s) {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, timeout, [&] { return set_; });
  }
  // Waits until set or until stop is requested; true when set.
  bool wait(const std::stop_token& stop) {
    std::unique_lock lock(m_);
    return cv_.wait(lock, stop, [&] { return set_; });
  }

 private:
  std::mutex m_;
  std::condition_variable_any cv_;
  bool set_ = false;
};

class ops_worker_pool : public ops_conformance {
 protected:
  // Fast options for tests: short polls, no retry delay, the rescuer off
  // unless a test turns it on.
  static ops::worker_pool_options fast(int workers = 2) {
    ops::worker_pool_options o;
    o.workers = workers;
    o.poll_interval = 50ms;
    o.retry_base = 0ms;
    o.rescuer = false;
    o.shutdown_deadline = 20s;
    o.cancel_grace = 10s;
    return o;
  }

  ops::op_status status_of(const std::string& id) { return q().get(id).status; }

  bool eventually_status(const std::string& id, ops::op_status s) {
    return eventually([&] { return status_of(id) == s; }, 30s);
  }
};

}  // namespace spool::test
