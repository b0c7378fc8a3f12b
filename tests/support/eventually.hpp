// Polling for the tests: wait until a condition holds, without fixed sleeps.
#pragma once

#include <chrono>
#include <thread>

namespace spool::test {

// Polls pred every 5 ms until it holds (true) or limit passes (false); the
// caller asserts the result.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace spool::test
