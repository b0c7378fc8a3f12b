// The limit on a queue handle's concurrent batch claims (src/common/claim_gate.hpp).
#include "common/claim_gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

namespace spool::detail {
namespace {

using namespace std::chrono_literals;

std::string reason_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable);
    return e.reason();
  }
  return "no error";
}

TEST(claim_gate, no_more_batch_claims_than_the_limit_run_at_once) {
  claim_gate gate(2);
  std::atomic<int> running{0}, most{0};
  std::vector<std::thread> claimers;
  for (int t = 0; t < 8; ++t) {
    claimers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        const auto turn = gate.enter(100, {});
        const int now = running.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::yield();
        running.fetch_sub(1);
      }
    });
  }
  for (auto& c : claimers) c.join();
  EXPECT_LE(most.load(), 2);
  EXPECT_GE(most.load(), 1);
  EXPECT_EQ(running.load(), 0);
}

TEST(claim_gate, small_claims_and_a_gate_without_limit_never_wait) {
  claim_gate one(1);
  const auto held = one.enter(100, {});
  claim_gate unlimited(0);
  // Both would wait for ever if they waited at all: the one place is held.
  auto entered = std::async(std::launch::async, [&] {
    const auto small = one.enter(claim_gate::smallest_limited - 1, {});
    const auto a = unlimited.enter(1000, {});
    const auto b = unlimited.enter(1000, {});
    return true;
  });
  ASSERT_EQ(entered.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(entered.get());
}

TEST(claim_gate, a_place_given_back_lets_the_next_claim_in) {
  claim_gate gate(1);
  auto first = std::make_optional(gate.enter(100, {}));
  auto second = std::async(std::launch::async, [&] { return gate.enter(100, {}); });
  EXPECT_EQ(second.wait_for(50ms), std::future_status::timeout);  // it waits while the place is held
  first.reset();
  second.get();  // and gets in once it is given back
}

TEST(claim_gate, the_deadline_of_the_call_ends_the_wait_as_unavailable) {
  claim_gate gate(1);
  const auto held = gate.enter(100, {});
  EXPECT_EQ(reason_of([&] { (void)gate.enter(100, call_options::within(30ms)); }), "deadline_exceeded");
}

TEST(claim_gate, cancelling_the_call_ends_the_wait_as_unavailable) {
  claim_gate gate(1);
  const auto held = gate.enter(100, {});
  std::stop_source stop;
  auto waiter = std::async(std::launch::async, [&] {
    return reason_of([&] { (void)gate.enter(100, call_options{std::nullopt, stop.get_token()}); });
  });
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout);
  stop.request_stop();
  EXPECT_EQ(waiter.get(), "cancelled");
}

TEST(claim_gate, a_call_already_past_its_limits_is_refused_before_it_waits) {
  claim_gate gate(4);
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(reason_of([&] {
              (void)gate.enter(100, call_options{std::nullopt, stop.get_token()});
            }),
            "cancelled");
  EXPECT_EQ(reason_of([&] {
              (void)gate.enter(100, call_options{std::chrono::steady_clock::now() - 1ms, {}});
            }),
            "deadline_exceeded");
}

}  // namespace
}  // namespace spool::detail
