// The stop every queue handle shares (src/common/stop_gate.hpp).
#include "common/stop_gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

namespace spool::detail {
namespace {

error stopped() { return error(errc::stopped, "the handle is stopped"); }

TEST(stop_gate, an_open_gate_runs_the_call_and_returns_its_value) {
  stop_gate gate;
  EXPECT_EQ(gate.run([] { return 7; }, stopped), 7);
  EXPECT_FALSE(gate.closed());
}

TEST(stop_gate, a_closed_gate_refuses_new_calls_as_stopped_without_running_them) {
  stop_gate gate;
  EXPECT_TRUE(gate.close());
  EXPECT_FALSE(gate.close());  // idempotent
  bool ran = false;
  try {
    gate.run([&] { ran = true; return 0; }, stopped);
    ADD_FAILURE() << "a closed gate ran a call";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::stopped);
  }
  EXPECT_FALSE(ran);
}

TEST(stop_gate, closing_waits_for_the_running_call_and_reports_its_racing_failure_as_stopped) {
  stop_gate gate;
  std::promise<void> entered, closed;
  auto call = std::async(std::launch::async, [&] {
    return gate.run(
        [&]() -> int {
          entered.set_value();
          closed.get_future().wait();
          throw error(errc::unavailable, "the connection went away under the close");
        },
        stopped);
  });
  entered.get_future().wait();
  ASSERT_TRUE(gate.close());
  std::atomic<bool> idle{false};
  std::thread waiter([&] {
    gate.wait_idle();
    idle = true;
  });
  EXPECT_FALSE(idle.load());  // the call is still inside
  closed.set_value();
  try {
    (void)call.get();
    ADD_FAILURE() << "the call did not fail";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::stopped);
  }
  waiter.join();
  EXPECT_TRUE(idle.load());
}

TEST(stop_gate, an_error_of_an_open_gate_is_the_callers_own) {
  stop_gate gate;
  try {
    gate.run([]() -> int { throw error(errc::not_found, "no such row"); }, stopped);
    ADD_FAILURE() << "no error";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_found);
  }
}

}  // namespace
}  // namespace spool::detail
