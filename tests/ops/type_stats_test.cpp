// The operator's per-type views (the console's source): stats_by_type and
// throughput, read from the ops' own rows on both engines.
#include <chrono>

#include "ops/ops_fixture.hpp"

namespace spool::test {

using ops_type_stats = ops_conformance;

TEST_P(ops_type_stats, counts_are_kept_per_type_with_each_types_oldest_pending_op) {
  const auto before =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  enqueue("mail");
  enqueue("mail");
  enqueue("thumb");
  const auto claimed = claim({"thumb"});
  q().ack(claimed.id, *claimed.lease_token);
  const auto running = claim({"mail"});
  (void)running;
  const auto stats = q().stats_by_type();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].type, "mail");
  EXPECT_EQ(stats[0].counts.pending, 1);
  EXPECT_EQ(stats[0].counts.running, 1);
  ASSERT_TRUE(stats[0].oldest_pending_enqueued_at.has_value());
  EXPECT_GE(*stats[0].oldest_pending_enqueued_at, before - 1);
  EXPECT_EQ(stats[1].type, "thumb");
  EXPECT_EQ(stats[1].counts.done_24h, 1);
  EXPECT_EQ(stats[1].counts.pending, 0);
  EXPECT_FALSE(stats[1].oldest_pending_enqueued_at.has_value());
  // The per-type counts add up to stats().
  const auto all = q().stats();
  EXPECT_EQ(all.pending, 1);
  EXPECT_EQ(all.running, 1);
  EXPECT_EQ(all.done_24h, 1);
}

TEST_P(ops_type_stats, throughput_counts_each_op_enqueued_and_each_done_in_its_minute) {
  enqueue("mail");
  enqueue("mail");
  enqueue("thumb");
  const auto op = claim({"thumb"});
  q().ack(op.id, *op.lease_token);
  std::int64_t mail_in = 0, thumb_in = 0, thumb_done = 0, mail_done = 0;
  for (const auto& m : q().throughput()) {
    EXPECT_EQ(m.minute % 60, 0);
    if (m.type == "mail") {
      mail_in += m.enqueued;
      mail_done += m.completed;
    } else if (m.type == "thumb") {
      thumb_in += m.enqueued;
      thumb_done += m.completed;
    }
  }
  EXPECT_EQ(mail_in, 2);
  EXPECT_EQ(mail_done, 0);
  EXPECT_EQ(thumb_in, 1);
  EXPECT_EQ(thumb_done, 1);
  EXPECT_ERRC((void)q().throughput(std::chrono::minutes(0)), errc::invalid_argument);
  EXPECT_ERRC((void)q().throughput(std::chrono::minutes(24 * 60 + 1)), errc::invalid_argument);
}

SPOOL_OPS_BOTH_ENGINES(ops_type_stats);

}  // namespace spool::test
