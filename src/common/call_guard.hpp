// Checks of a call's deadline and cancellation, shared by both engines.
#pragma once

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
    throw error(errc::unavailable, std::string(what) + ": deadline passed before it was sent", "deadline_exceeded");
  }
}

// Why a running call must end now: "" (it may go on), "cancelled" or "deadline_exceeded".
inline const char* interruption(const call_options& o) {
  if (o.stop.stop_requested()) return "cancelled";
  if (o.deadline && std::chrono::steady_clock::now() >= *o.deadline) return "deadline_exceeded";
  return "";
}

}  // namespace spool::detail
