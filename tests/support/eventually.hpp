// Polling for the tests: wait until a condition holds, without fixed sleeps.
#pragma once

#include <chrono>
#include <thread>

namespace spool::test {

// Polls pred every `every` until it holds (true) or limit passes (false); the
// caller asserts the result. A predicate that spawns a process per call wants
// a longer interval than the 5 ms default.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(60),
                std::chrono::milliseconds every = std::chrono::milliseconds(5)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(every);
  }
  return true;
}

}  // namespace spool::test
