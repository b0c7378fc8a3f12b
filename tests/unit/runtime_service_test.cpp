// The runtimes' shared foundation (src/runtime/): a periodic service driven by
// its clock, and a worker group's start, stop and join.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "runtime/service.hpp"
#include "runtime/worker_group.hpp"

namespace spool::detail {
namespace {

using std::chrono::milliseconds;

// A clock whose waits return at once and move its time forward, so a
// service's whole schedule runs without waiting. It records every wait.
class manual_clock final : public clock {
 public:
  [[nodiscard]] time_point now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  bool sleep_for(milliseconds d, const std::stop_token& stop) override {
    if (stop.stop_requested()) return false;
    std::lock_guard lock(mu_);
    now_ += d;
    waits_.push_back(d);
    return true;
  }
  [[nodiscard]] std::vector<milliseconds> waits() const {
    std::lock_guard lock(mu_);
    return waits_;
  }

 private:
  mutable std::mutex mu_;
  time_point now_{};
  std::vector<milliseconds> waits_;
};

TEST(periodic_service, waits_first_wait_then_as_long_as_each_step_returns_until_a_step_returns_nothing) {
  manual_clock c;
  std::vector<clock::time_point> ran_at;
  {
    periodic_service s(c);
    int step = 0;
    std::atomic<bool> done{false};
    s.start(milliseconds(100), [&](const std::stop_token&) -> std::optional<milliseconds> {
      ran_at.push_back(s.time().now());
      if (++step == 3) {
        done = true;
        return std::nullopt;
      }
      return milliseconds(step * 10);
    });
    while (!done) std::this_thread::yield();
    s.stop();
  }
  EXPECT_EQ(c.waits(), (std::vector<milliseconds>{milliseconds(100), milliseconds(10), milliseconds(20)}));
  ASSERT_EQ(ran_at.size(), 3U);
  EXPECT_EQ(ran_at[0], clock::time_point{} + milliseconds(100));
  EXPECT_EQ(ran_at[2], clock::time_point{} + milliseconds(130));
}

TEST(periodic_service, a_stop_ends_a_long_wait_at_once_on_the_real_clock) {
  periodic_service s;
  std::atomic<int> steps{0};
  s.start(std::chrono::hours(1), [&](const std::stop_token&) {
    ++steps;
    return std::optional(milliseconds(1));
  });
  s.stop();  // would hang for an hour if the wait ignored the stop
  s.stop();  // idempotent
  EXPECT_EQ(steps.load(), 0);
  EXPECT_FALSE(real_clock().sleep_for(milliseconds(1), [] {
    std::stop_source src;
    src.request_stop();
    return src.get_token();
  }()));
}

TEST(worker_group, runs_n_workers_that_all_see_one_stop_request_and_are_joined) {
  worker_group g;
  std::mutex mu;
  std::set<std::thread::id> seen;
  std::atomic<int> stopped{0};
  g.start(4, [&](const std::stop_token& stop) {
    {
      std::lock_guard lock(mu);
      seen.insert(std::this_thread::get_id());
    }
    while (!stop.stop_requested()) std::this_thread::yield();
    ++stopped;
  });
  EXPECT_EQ(g.size(), 4U);
  g.request_stop();
  g.join();
  EXPECT_EQ(g.size(), 0U);
  EXPECT_EQ(stopped.load(), 4);
  EXPECT_EQ(seen.size(), 4U);
}

TEST(worker_group, starts_again_after_a_join_with_a_token_that_is_not_stopped) {
  worker_group g;
  g.start(1, [](const std::stop_token&) {});
  g.request_stop();
  g.join();
  EXPECT_TRUE(g.token().stop_requested());
  std::atomic<bool> saw_stop{true};
  g.start(2, [&](const std::stop_token& stop) {
    if (!stop.stop_requested()) saw_stop = false;
  });
  g.join();
  EXPECT_FALSE(saw_stop.load());
}

TEST(worker_group, the_destructor_stops_and_joins_workers_still_running) {
  std::atomic<bool> returned{false};
  {
    worker_group g;
    g.start(2, [&](const std::stop_token& stop) {
      while (!stop.stop_requested()) std::this_thread::yield();
      returned = true;
    });
  }
  EXPECT_TRUE(returned.load());
}

}  // namespace
}  // namespace spool::detail
