// The one exponential curve under every retry delay (runtime/retry_curve.hpp).
#include "runtime/retry_curve.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace spool::detail {
namespace {

TEST(retry_curve, the_first_failure_waits_the_base_and_each_next_one_multiplies_it) {
  EXPECT_EQ(exponential_delay(1, 100, 2, 1e9), 100);
  EXPECT_EQ(exponential_delay(2, 100, 2, 1e9), 200);
  EXPECT_EQ(exponential_delay(5, 100, 2, 1e9), 1600);
  EXPECT_EQ(exponential_delay(3, 10, 1.5, 1e9), 22.5);
}

TEST(retry_curve, a_failure_count_below_one_counts_as_the_first) {
  EXPECT_EQ(exponential_delay(0, 100, 2, 1e9), 100);
  EXPECT_EQ(exponential_delay(-7, 100, 2, 1e9), 100);
}

TEST(retry_curve, the_cap_holds_however_many_failures_came_before) {
  EXPECT_EQ(exponential_delay(11, 1, 2, 1000), 1000);
  EXPECT_EQ(exponential_delay(5000, 1, 2, 1000), 1000);  // 2^4999 overflows to +inf, then is capped
  EXPECT_EQ(exponential_delay(std::numeric_limits<std::int64_t>::max(), 1, 2, 1000), 1000);
}

TEST(retry_curve, a_zero_base_or_cap_means_no_wait) {
  EXPECT_EQ(exponential_delay(5000, 0, 2, 1000), 0);  // never 0 × inf = NaN
  EXPECT_EQ(exponential_delay(3, 100, 2, 0), 0);
  EXPECT_EQ(exponential_delay(3, -5, 2, 1000), 0);
}

TEST(retry_curve, a_multiplier_of_one_keeps_the_base) {
  EXPECT_EQ(exponential_delay(1000, 250, 1, 1e9), 250);
}

}  // namespace
}  // namespace spool::detail
