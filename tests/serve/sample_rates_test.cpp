// The console's throughput arithmetic on planted samples: each case of
// serve/console/sample_rates.hpp, including the race between a sample's two
// statements that once made the sampler count a completion nobody made.
#include "serve/console/sample_rates.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace spool::serve::console {

namespace {

// Per point of queue q: {enqueued, completed} as message counts (rate × seconds).
std::vector<std::pair<long, long>> points(const std::deque<queue_sample>& samples,
                                          const std::string& q = "q") {
  std::vector<std::pair<long, long>> out;
  const auto history = rates_of(samples, 1);  // kept: the loop reads into it
  for (const auto& queue : history["queues"]) {
    if (queue["queue"] != q) continue;
    for (const auto& p : queue["points"]) {
      const double dt = p["seconds"].get<double>();
      out.emplace_back(std::lround(p["enqueued"].get<double>() * dt),
                       std::lround(p["completed"].get<double>() * dt));
    }
  }
  return out;
}

queue_sample at(std::int64_t t, std::int64_t total, std::int64_t arrived) {
  return {t, {{"q", {total, arrived}}}};
}

using counts = std::vector<std::pair<long, long>>;

}  // namespace

TEST(sample_rates, the_first_sample_is_a_baseline_and_makes_no_point) {
  EXPECT_TRUE(points({at(100, 7, 7)}).empty());
  EXPECT_EQ(rates_of({}, 5)["interval_s"], 5);
}

TEST(sample_rates, arrivals_are_enqueued_and_what_left_is_completed) {
  // 5 arrive (total 5); then 3 arrive and 6 leave (total 2).
  EXPECT_EQ(points({at(100, 0, 0), at(101, 5, 5), at(102, 2, 3)}), (counts{{5, 0}, {3, 6}}));
}

TEST(sample_rates, rates_are_per_second_of_the_interval) {
  const auto h = rates_of({at(100, 0, 0), at(104, 8, 8)}, 2);
  const auto& p = h["queues"][0]["points"][0];
  EXPECT_EQ(p["t"], 104);
  EXPECT_DOUBLE_EQ(p["seconds"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(p["enqueued"].get<double>(), 2.0);
}

TEST(sample_rates, a_row_in_the_total_before_it_is_an_arrival_is_not_taken_for_a_completion) {
  // The row committed between the sample's two statements: in the total at 101,
  // an arrival only at 102. Nothing completed at any point.
  EXPECT_EQ(points({at(100, 0, 0), at(101, 1, 0), at(102, 1, 1)}), (counts{{0, 0}, {1, 0}}));
  // The same with traffic around it: 4 arrive at 101 (one of them only at 102), 2 leave at 102.
  EXPECT_EQ(points({at(100, 10, 0), at(101, 14, 3), at(102, 13, 2)}), (counts{{3, 0}, {2, 2}}));
}

TEST(sample_rates, a_shortfall_is_carried_one_point_only) {
  // 1 short at 101, settled at 102; at 103 one row leaves and must count.
  EXPECT_EQ(points({at(100, 0, 0), at(101, 1, 0), at(102, 1, 1), at(103, 0, 0)}),
            (counts{{0, 0}, {1, 0}, {0, 1}}));
}

TEST(sample_rates, a_queue_gone_from_a_sample_completed_all_its_rows) {
  std::deque<queue_sample> s{at(100, 4, 4), {101, {}}};
  EXPECT_EQ(points(s), (counts{{0, 4}}));
}

TEST(sample_rates, queues_are_counted_apart) {
  std::deque<queue_sample> s{{100, {{"a", {0, 0}}, {"b", {0, 0}}}}, {101, {{"a", {2, 2}}, {"b", {1, 3}}}}};
  EXPECT_EQ(points(s, "a"), (counts{{2, 0}}));
  EXPECT_EQ(points(s, "b"), (counts{{3, 2}}));
}

}  // namespace spool::serve::console
