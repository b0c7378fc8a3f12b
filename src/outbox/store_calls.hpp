// What every spool::outbox::store call shares: the argument errors (invalid,
// check_ref; defined in store.cpp) and observed(), which times a call and emits its event.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include "spool/error.hpp"
#include "spool/outbox/store.hpp"

namespace spool::outbox::detail {

[[noreturn]] void invalid(const char* reason, const std::string& message);
void check_ref(const lease_ref& ref);

// Runs fn, timing it and emitting one event for the outcome (failures with
// their errc and reason); the event is completed by `fill` on success.
template <class Fn, class Fill>
auto observed(const store* s, operation op, void (store::*emit)(event) const, Fn&& fn, Fill&& fill,
              std::string message_id = {}) {
  using std::chrono::microseconds;
  const auto start = std::chrono::steady_clock::now();
  event e;
  e.op = op;
  e.message_id = std::move(message_id);
  try {
    auto result = fn();
    e.duration = std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - start);
    fill(e, result);
    (s->*emit)(e);
    return result;
  } catch (const error& err) {
    e.ok = false;
    e.duration = std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - start);
    e.code = err.code();
    e.reason = err.reason();
    (s->*emit)(e);
    throw;
  }
}

}  // namespace spool::outbox::detail
