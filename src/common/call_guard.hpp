// Checks of a call's deadline and cancellation, shared by both engines.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

#include "spool/call_options.hpp"
#include "spool/error.hpp"

namespace spool::detail {

// Throws unavailable (deadline_exceeded / cancelled) when the call may not
// start or continue; nothing has been sent yet when this is used.
inline void check_call(const call_options& o, const char* what) {
  if (o.stop.stop_requested()) {
    throw error(errc::unavailable, std::string(what) + ": cancelled before it was sent", "cancelled");
  }
  if (o.deadline && std::chrono::steady_clock::now() >= *o.deadline) {
    throw error(errc::unavailable, std::string(what) + ": deadline passed before it was sent",
                "deadline_exceeded");
  }
}

// Waits on cv, with lock held, until ready() or the call's limits end the
// wait; returns with lock held and ready() true. Throws unavailable
// (cancelled / deadline_exceeded, naming what) when the limits ended it; the
// caller has sent nothing then.
template <class Ready>
void wait_within(std::condition_variable_any& cv, std::unique_lock<std::mutex>& lock, const call_options& o,
                 Ready ready, const char* what) {
  if (o.deadline) {
    cv.wait_until(lock, o.stop, *o.deadline, ready);
  } else {
    cv.wait(lock, o.stop, ready);
  }
  if (ready()) return;
  lock.unlock();
  check_call(o, what);
  throw error(errc::unavailable, std::string(what) + ": deadline passed", "deadline_exceeded");
}

// Why a running call must end now: "" (it may go on), "cancelled" or "deadline_exceeded".
inline const char* interruption(const call_options& o) {
  if (o.stop.stop_requested()) return "cancelled";
  if (o.deadline && std::chrono::steady_clock::now() >= *o.deadline) return "deadline_exceeded";
  return "";
}

}  // namespace spool::detail
