// The stop every queue handle shares (mq::queue::stop, ops::queue::close):
// calls pass through the gate while it is open; closing refuses new calls,
// lets the owner wake its waiters, then waits for the running calls; and a
// call that fails because of a racing close reports `stopped`, never the
// driver error the close caused.
// Thread safety: every member is safe from any thread.
#pragma once

#include <condition_variable>
#include <mutex>

#include "spool/error.hpp"

namespace spool::detail {

class stop_gate {
 public:
  // Runs f as one call. Refused with stopped() once closed; an error from f
  // while the gate closes is reported as stopped() unless it already is one.
  template <class F, class Stopped>
  auto run(F&& f, Stopped&& stopped) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) throw stopped();
      ++running_;
    }
    struct leave {
      stop_gate* gate;
      ~leave() {
        std::lock_guard lock(gate->mutex_);
        if (--gate->running_ == 0) gate->idle_.notify_all();
      }
    } guard{this};
    try {
      return f();
    } catch (const error& e) {
      if (e.code() != errc::stopped && closed()) throw stopped();
      throw;
    }
  }

  // Refuses new calls from now on. Returns false when the gate was already
  // closed (closing is idempotent).
  bool close() {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    closed_ = true;
    return true;
  }

  // Waits until no call is running (after close(): until the last one left).
  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return running_ == 0; });
  }

  [[nodiscard]] bool closed() {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  bool closed_ = false;
  int running_ = 0;
};

}  // namespace spool::detail
