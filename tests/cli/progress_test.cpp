// The CLI's progress line (cli/progress.hpp): its text. That it stays quiet
// off a terminal is checked on the real binary in metrics_endpoint_test.cpp.
#include "progress.hpp"

#include <gtest/gtest.h>

namespace spool::cli {
namespace {

using namespace std::chrono_literals;

TEST(cli_progress, the_line_names_label_elapsed_time_counts_in_order_and_the_rate) {
  EXPECT_EQ(format_progress("relay", 65s, {{"delivered", 120}, {"retried", 3}}, 12.5),
            "relay 1m05s: delivered 120, retried 3 (12.5/s)");
}

TEST(cli_progress, elapsed_time_is_seconds_then_minutes_then_hours) {
  EXPECT_EQ(format_progress("x", 0s, {}, std::nullopt), "x 0s:");
  EXPECT_EQ(format_progress("x", 59s, {}, std::nullopt), "x 59s:");
  EXPECT_EQ(format_progress("x", 3600s + 180s + 7s, {}, std::nullopt), "x 1h03m:");
}

TEST(cli_progress, without_a_rate_the_line_ends_after_the_counts) {
  EXPECT_EQ(format_progress("outbox prune", 2s, {{"deleted", 5000}}, std::nullopt),
            "outbox prune 2s: deleted 5000");
  EXPECT_EQ(format_progress("mq work", 1s, {{"acked", 0}}, 0.0), "mq work 1s: acked 0 (0.0/s)");
}

TEST(cli_progress, a_disabled_line_draws_nothing_and_is_quiet_when_json_is_asked_for) {
  EXPECT_FALSE(progress_wanted(true));
  progress_line line(false);
  EXPECT_FALSE(line.enabled());
  testing::internal::CaptureStderr();
  line.show("never shown");
  line.clear();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace spool::cli
