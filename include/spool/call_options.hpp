// Per-call limits that every database call accepts (DESIGN.md, Calls).
// Thread safety: a plain value; the stop_token may be shared between threads.
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>

namespace spool {

struct call_options {
  // Give up at this time. Before the statement was sent that is `unavailable`
  // (reason deadline_exceeded): nothing was done. After a write was sent the
  // statement is cancelled and the call is `in_doubt`.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Cancellation: the same rules, with reason `cancelled`.
  std::stop_token stop;

  // A deadline `budget` from now.
  [[nodiscard]] static call_options within(std::chrono::milliseconds budget) {
    return {std::chrono::steady_clock::now() + budget, {}};
  }
  [[nodiscard]] bool limited() const noexcept { return deadline.has_value() || stop.stop_possible(); }
};

}  // namespace spool
