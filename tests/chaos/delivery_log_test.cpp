// The delivery-log checker itself (support/delivery_log.hpp): what it must
// catch, on hand-made logs.
#include "support/delivery_log.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "support/test_db.hpp"

namespace spool::test {
namespace {

std::vector<produced_record> three_in_one_group() { return {{"m0", "g", 0}, {"m1", "g", 1}, {"m2", "g", 2}}; }

TEST(delivery_log_checker, a_clean_run_is_ok) {
  const auto r = check_deliveries(three_in_one_group(),
                                  {{"m0", 1, 10, true, "c"}, {"m1", 1, 20, true, "c"}, {"m2", 1, 30, true, "c"}}, true);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.produced, 3);
  EXPECT_EQ(r.acked_ids, 3);
  EXPECT_EQ(r.duplicates, 0);
}

TEST(delivery_log_checker, a_message_never_handled_is_lost) {
  const auto r = check_deliveries(three_in_one_group(), {{"m0", 1, 10, true, "c"}, {"m2", 1, 30, true, "c"}}, false);
  ASSERT_EQ(r.lost.size(), 1u);
  EXPECT_EQ(r.lost[0], "m1");
  EXPECT_FALSE(r.ok());
}

TEST(delivery_log_checker, a_redelivery_after_an_unacked_delivery_is_an_explained_duplicate) {
  const auto r = check_deliveries(three_in_one_group(),
                                  {{"m0", 1, 10, false, "killed"}, {"m0", 2, 15, true, "c"}, {"m1", 1, 20, true, "c"},
                                   {"m2", 1, 30, true, "c"}},
                                  true);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.duplicates, 1);
  EXPECT_EQ(r.explained_duplicates, 1);
}

TEST(delivery_log_checker, a_stale_holder_handling_after_the_new_holder_acked_is_an_explained_duplicate) {
  // c0 claimed m0, stalled past its window; c1 claimed, handled and acked it;
  // then c0 got round to handling it (its ack fails: no A line).
  const auto r = check_deliveries(three_in_one_group(),
                                  {{"m0", 2, 10, true, "c1"}, {"m0", 1, 15, false, "c0"}, {"m1", 1, 20, true, "c"},
                                   {"m2", 1, 30, true, "c"}},
                                  true);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.explained_duplicates, 1);
}

TEST(delivery_log_checker, an_id_a_restarted_producer_published_again_may_be_acked_twice) {
  // The producer died between commit and log; m0 was consumed; the restarted
  // producer published m0 again (R) and it was consumed again.
  const std::vector<delivery_record> ds = {{"m0", 1, 10, true, "a"}, {"m0", 1, 15, true, "b"},
                                           {"m1", 1, 20, true, "c"}, {"m2", 1, 30, true, "c"}};
  EXPECT_FALSE(check_deliveries(three_in_one_group(), ds, true).ok());
  const auto r = check_deliveries(three_in_one_group(), ds, true, {"m0"});
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.republished, 1);
  EXPECT_EQ(r.explained_duplicates, 1);
}

TEST(delivery_log_checker, a_message_acked_by_two_deliveries_is_an_unexplained_double_claim) {
  const auto r = check_deliveries(three_in_one_group(),
                                  {{"m0", 1, 10, true, "a"}, {"m0", 2, 15, true, "b"}, {"m1", 1, 20, true, "c"},
                                   {"m2", 1, 30, true, "c"}},
                                  true);
  ASSERT_EQ(r.unexplained.size(), 1u);
  EXPECT_NE(r.unexplained[0].find("m0"), std::string::npos);
  EXPECT_FALSE(r.ok());
}

TEST(delivery_log_checker, a_later_message_first_handled_before_an_earlier_one_is_an_order_violation) {
  const auto r = check_deliveries(three_in_one_group(),
                                  {{"m1", 1, 10, true, "c"}, {"m0", 1, 20, true, "c"}, {"m2", 1, 30, true, "c"}}, true);
  ASSERT_EQ(r.order_violations.size(), 1u);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(check_deliveries(three_in_one_group(),
                               {{"m1", 1, 10, true, "c"}, {"m0", 1, 20, true, "c"}, {"m2", 1, 30, true, "c"}}, false)
                  .ok())
      << "order is only checked when asked (ungrouped workloads)";
}

TEST(delivery_log_checker, logs_are_read_back_with_acks_paired_and_a_torn_last_line_ignored) {
  temp_dir dir;
  {
    log_writer p(dir.path() / "x-producer.log");
    p.line("P\tm0\tg\t0");
    p.line("P\tm1\tg\t1");
    log_writer c(dir.path() / "x-consumer.log");
    c.line("H\tm0\t1\t100");
    c.line("A\tm0\t101");
    c.line("H\tm1\t1\t200");  // killed before its ack
  }
  {
    std::ofstream torn(dir.path() / "x-consumer.log", std::ios::app);
    torn << "A\tm1\t2";  // no newline: the write was cut
  }
  std::vector<produced_record> produced;
  std::vector<delivery_record> deliveries;
  read_logs(dir.path(), "x-", produced, deliveries);
  ASSERT_EQ(produced.size(), 2u);
  ASSERT_EQ(deliveries.size(), 2u);
  const auto r = check_deliveries(produced, deliveries, true);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.acked_ids, 1);
}

}  // namespace
}  // namespace spool::test
