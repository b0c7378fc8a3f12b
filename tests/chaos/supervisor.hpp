// The crash tests' supervisor: processes in slots, SIGKILLed one at a time at
// seeded random moments and restarted at once, until the test says enough.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_runner.hpp"

namespace spool::test {

// $SPOOL_CHAOS_SEED, else a fresh random seed (the test prints it).
inline std::uint64_t chaos_seed() {
  if (const char* s = std::getenv("SPOOL_CHAOS_SEED")) return std::stoull(s);
  return std::random_device{}();
}

// "suite.test/param" of the running gtest test, for the seed line the soak collects.
inline std::string current_test() {
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  return t == nullptr ? std::string("?") : std::string(t->test_suite_name()) + "." + t->name();
}

// A program the supervisor keeps running: a producer (runs to completion:
// exit 0 means all its work is committed and logged) or a long-running one.
struct supervised {
  std::string name;
  std::string exe;
  std::vector<std::string> args;
  bool runs_to_completion = false;
  // A line a long-running program prints on stderr once a SIGTERM stops it
  // gracefully (its signal handling is in place, before its first claim).
  std::string ready_marker;
  int incarnation = 0;
  std::unique_ptr<cli_process> proc;
  bool finished = false;

  void start(const std::filesystem::path& dir) {
    proc = std::make_unique<cli_process>(exe, args, dir, name + "-" + std::to_string(incarnation++));
  }
};

struct chaos_outcome {
  bool done = false;  // `enough` held before the deadline
  int kills = 0, kills_of_finite = 0;
  std::vector<std::string> failures;  // producers that exited non-zero
};

// How often the supervisor kills: a pause drawn uniformly from [min, max]
// before each kill.
struct kill_pace {
  std::chrono::milliseconds min{30}, max{300};
};

// Starts every slot, then kills one after each pause until every producer has
// finished and enough() holds, or until the deadline.
inline chaos_outcome run_chaos(std::vector<supervised>& slots, const std::filesystem::path& dir,
                               std::mt19937_64& rng, const std::function<bool()>& enough,
                               std::chrono::minutes deadline, kill_pace pace = {}) {
  chaos_outcome out;
  for (auto& s : slots) s.start(dir);
  const auto give_up = std::chrono::steady_clock::now() + deadline;
  auto producers_done = [&] {
    bool all = true;
    for (auto& s : slots) {
      if (!s.runs_to_completion || s.finished) continue;
      if (!s.proc->running()) {
        if (const int code = s.proc->stop(0); code != 0) {  // already exited: reap it
          out.failures.push_back(s.name + " exited " + std::to_string(code) + ": " + s.proc->err());
        }
        s.finished = true;
        continue;
      }
      all = false;
    }
    return all;
  };
  while (std::chrono::steady_clock::now() < give_up) {
    if (producers_done() && enough()) {
      out.done = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::uniform_int_distribution<std::int64_t>(pace.min.count(), pace.max.count())(rng)));
    auto& victim = slots[std::uniform_int_distribution<std::size_t>(0, slots.size() - 1)(rng)];
    if (victim.finished || !victim.proc->running()) continue;
    victim.proc->stop(SIGKILL);
    ++out.kills;
    if (victim.runs_to_completion) ++out.kills_of_finite;
    victim.start(dir);
  }
  return out;
}

// True once s's current incarnation printed its ready marker, waiting up to
// limit for it (false at once when it has exited).
inline bool wait_ready(supervised& s, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (s.proc->err().find(s.ready_marker) != std::string::npos) return true;
    if (!s.proc->running() || std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The graceful end of every long-running slot: each is stopped with SIGTERM
// only once it said it is ready, since a SIGTERM that reaches a process
// still loading (before main) kills it with 143 however correct the program
// is. Such an exit is accepted only from a process that never became ready
// within limit and never wrote a line (so it never reached its first claim,
// which comes after its ready line). Returns the failures, one line each.
inline std::vector<std::string> stop_when_ready(std::vector<supervised>& slots,
                                                std::chrono::seconds limit = std::chrono::seconds(60)) {
  std::vector<std::string> failures;
  for (auto& s : slots) {
    if (s.runs_to_completion) continue;
    const bool ready = wait_ready(s, limit);
    const int code = s.proc->stop(SIGTERM);
    if (code == 0) continue;
    if (code == 128 + SIGTERM && !ready && s.proc->err().empty()) continue;
    failures.push_back(s.name + " (incarnation " + std::to_string(s.incarnation - 1) +
                       (ready ? ", ready" : ", never ready") + ") exited " + std::to_string(code) + ": " +
                       s.proc->err());
  }
  return failures;
}

}  // namespace spool::test
