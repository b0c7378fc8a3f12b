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
  const auto r = check_deliveries(
      three_in_one_group(), {{"m0", 1, 10, true, "c"}, {"m1", 1, 20, true, "c"}, {"m2", 1, 30, true, "c"}},
      {.group_order = true});
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.produced, 3);
  EXPECT_EQ(r.acked_ids, 3);
  EXPECT_EQ(r.duplicates, 0);
}

TEST(delivery_log_checker, a_message_never_handled_is_lost) {
  const auto r = check_deliveries(three_in_one_group(), {{"m0", 1, 10, true, "c"}, {"m2", 1, 30, true, "c"}});
  ASSERT_EQ(r.lost.size(), 1u);
  EXPECT_EQ(r.lost[0], "m1");
  EXPECT_FALSE(r.ok());
}

TEST(delivery_log_checker, a_redelivery_after_an_unacked_delivery_is_an_explained_duplicate) {
  const auto r = check_deliveries(three_in_one_group(),
                                  {{"m0", 1, 10, false, "killed"},
                                   {"m0", 2, 15, true, "c"},
                                   {"m1", 1, 20, true, "c"},
                                   {"m2", 1, 30, true, "c"}},
                                  {.group_order = true});
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.duplicates, 1);
  EXPECT_EQ(r.explained_duplicates, 1);
}

TEST(delivery_log_checker, a_stale_holder_handling_after_the_new_holder_acked_is_an_explained_duplicate) {
  // c0 claimed m0, stalled past its window; c1 claimed, handled and acked it;
  // then c0 got round to handling it (its ack fails: no A line).
  const auto r = check_deliveries(three_in_one_group(),
                                  {{"m0", 2, 10, true, "c1"},
                                   {"m0", 1, 15, false, "c0"},
                                   {"m1", 1, 20, true, "c"},
                                   {"m2", 1, 30, true, "c"}},
                                  {.group_order = true});
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.explained_duplicates, 1);
}

TEST(delivery_log_checker, an_id_a_restarted_producer_published_again_may_be_acked_twice) {
  // The producer died between commit and log; m0 was consumed; the restarted
  // producer published m0 again (R) and it was consumed again.
  const std::vector<delivery_record> ds = {
      {"m0", 1, 10, true, "a"}, {"m0", 1, 15, true, "b"}, {"m1", 1, 20, true, "c"}, {"m2", 1, 30, true, "c"}};
  EXPECT_FALSE(check_deliveries(three_in_one_group(), ds, {.group_order = true}).ok());
  const auto r = check_deliveries(three_in_one_group(), ds, {.group_order = true, .republished = {"m0"}});
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.republished, 1);
  EXPECT_EQ(r.explained_duplicates, 1);
}

TEST(delivery_log_checker, a_message_acked_by_two_deliveries_is_an_unexplained_double_claim) {
  const auto r = check_deliveries(three_in_one_group(),
                                  {{"m0", 1, 10, true, "a"},
                                   {"m0", 2, 15, true, "b"},
                                   {"m1", 1, 20, true, "c"},
                                   {"m2", 1, 30, true, "c"}},
                                  {.group_order = true});
  ASSERT_EQ(r.unexplained.size(), 1u);
  EXPECT_NE(r.unexplained[0].find("m0"), std::string::npos);
  EXPECT_FALSE(r.ok());
}

TEST(delivery_log_checker, a_later_message_first_handled_before_an_earlier_one_is_an_order_violation) {
  const auto r = check_deliveries(
      three_in_one_group(), {{"m1", 1, 10, true, "c"}, {"m0", 1, 20, true, "c"}, {"m2", 1, 30, true, "c"}},
      {.group_order = true});
  ASSERT_EQ(r.order_violations.size(), 1u);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(check_deliveries(three_in_one_group(),
                               {{"m1", 1, 10, true, "c"}, {"m0", 1, 20, true, "c"}, {"m2", 1, 30, true, "c"}})
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
  const auto r = check_deliveries(produced, deliveries, {.group_order = true});
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.acked_ids, 1);
}

// A process SIGKILLed inside write(2) can leave the front of a line with no
// newline (the kernel stops a write that crosses a page boundary between
// pages). This cost a chaos run a "lost" message: the restarted consumer's
// first line continued the fragment, the merged line was dropped, and the
// message it handled and acked looked never handled.
TEST(delivery_log_checker,
     a_line_torn_by_a_kill_and_continued_by_another_writer_keeps_the_whole_record_at_its_end) {
  temp_dir dir;
  {
    log_writer p(dir.path() / "x-producer.log");
    p.line("P\tm0\tg\t0");
    p.line("P\tm1\tg\t1");
  }
  {
    // As a second process appending to the file (a shell handler) would
    // leave it: the fragment, then its own whole lines.
    std::ofstream c(dir.path() / "x-consumer.log", std::ios::binary);
    c << "H\tm0\t1\t100\t90\t1000\n"
         "H\tm1\t1\t20"  // killed here
         "H\tm1\t2\t300\t290\t1000\n"
         "A\tm1\t320\t305\n"
         "A\tm0\t1"  // killed here too
         "A\tm0\t330\t325\n";
  }
  std::vector<produced_record> produced;
  std::vector<delivery_record> deliveries;
  read_logs(dir.path(), "x-", produced, deliveries);
  ASSERT_EQ(deliveries.size(), 2u);
  EXPECT_EQ(deliveries[1].id, "m1");
  EXPECT_EQ(deliveries[1].receive_count, 2);
  const auto r = check_deliveries(produced, deliveries, {.group_order = true});
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.acked_ids, 2);
}

TEST(delivery_log_checker,
     a_writer_reopening_a_log_cuts_off_the_line_its_killed_predecessor_left_unfinished) {
  temp_dir dir;
  const auto file = dir.path() / "x-consumer.log";
  {
    log_writer c(file);
    c.line("H\tm0\t1\t100");
  }
  { std::ofstream(file, std::ios::app) << "A\tm0\t1"; }  // killed inside the write
  {
    log_writer c(file);
    c.line("H\tm1\t1\t200");
  }
  std::ifstream in(file);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "H\tm0\t1\t100\nH\tm1\t1\t200\n");
  {
    std::ofstream(file, std::ios::trunc) << "P\tm";  // only a fragment
    log_writer c(file);
    c.line("P\tm0\tg\t0");
  }
  std::ifstream again(file);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>()),
            "P\tm0\tg\t0\n");
}

TEST(delivery_log_checker, windows_and_ack_times_are_read_back_and_a_malformed_window_drops_its_line) {
  temp_dir dir;
  {
    log_writer c(dir.path() / "x-consumer.log");
    c.line("H\tm0\t1\t100\t90\t1000");
    c.line("A\tm0\t120\t105");
    c.line("H\tm1\t1\t200\t190\tsoon");  // not a number: the line is not a delivery
    c.line("A\tm1\t220\t210");           // so this ack pairs with nothing
  }
  std::vector<produced_record> produced;
  std::vector<delivery_record> deliveries;
  read_logs(dir.path(), "x-", produced, deliveries);
  ASSERT_EQ(deliveries.size(), 1u);
  EXPECT_EQ(deliveries[0].asked_ns, 90);
  EXPECT_EQ(deliveries[0].window_ns, 1000);
  EXPECT_TRUE(deliveries[0].acked);
  EXPECT_EQ(deliveries[0].ack_started_ns, 105);
}

// ---- planted faults (issue 12): each must fail the checker ----

constexpr std::int64_t ms = 1'000'000;

TEST(delivery_log_checker, planted_two_claims_with_the_same_receive_count_are_a_double_claim) {
  // Neither delivery acked (so not "acked twice"), far apart in time (so no
  // window overlaps): only the repeated count shows that two consumers held
  // the same claim.
  const auto r = check_deliveries(three_in_one_group(), {{"m0", 1, 10 * ms, false, "a"},
                                                         {"m0", 1, 5000 * ms, false, "b"},
                                                         {"m0", 2, 9000 * ms, true, "c"},
                                                         {"m1", 1, 9100 * ms, true, "c"},
                                                         {"m2", 1, 9200 * ms, true, "c"}});
  ASSERT_EQ(r.double_claims.size(), 1u) << r.summary();
  EXPECT_NE(r.double_claims[0].find("count 1 twice"), std::string::npos) << r.double_claims[0];
  EXPECT_FALSE(r.ok());
}

TEST(delivery_log_checker, planted_a_second_holder_inside_the_first_holders_live_window_is_a_double_claim) {
  // a asked at 0 for a window of at least 1 s; b's claim (count 2) was
  // handled at 300 ms, so it was claimed while a's window was open.
  delivery_record first{"m0", 1, 5 * ms, false, "a"};
  first.asked_ns = 0;
  first.window_ns = 1000 * ms;
  const std::vector<delivery_record> ds = {first,
                                           {"m0", 2, 300 * ms, true, "b"},
                                           {"m1", 1, 2000 * ms, true, "c"},
                                           {"m2", 1, 2100 * ms, true, "c"}};
  const auto r = check_deliveries(three_in_one_group(), ds);
  ASSERT_EQ(r.double_claims.size(), 1u) << r.summary();
  EXPECT_FALSE(r.ok());
  auto later = ds;
  later[1].at_ns = 1100 * ms;  // after the window: a legitimate redelivery
  EXPECT_TRUE(check_deliveries(three_in_one_group(), later).ok());
  // a stalled past its window and handled after b: claim order, not handling order, decides
  auto stale = ds;
  stale[0].at_ns = 1500 * ms;
  stale[1].at_ns = 1100 * ms;
  EXPECT_TRUE(check_deliveries(three_in_one_group(), stale).ok())
      << check_deliveries(three_in_one_group(), stale).summary();
}

TEST(delivery_log_checker,
     planted_an_id_acked_twice_fails_even_when_the_counts_differ_and_no_window_overlaps) {
  const auto r = check_deliveries(three_in_one_group(), {{"m0", 1, 10 * ms, true, "a"},
                                                         {"m0", 2, 9000 * ms, true, "b"},
                                                         {"m1", 1, 9100 * ms, true, "c"},
                                                         {"m2", 1, 9200 * ms, true, "c"}});
  ASSERT_EQ(r.unexplained.size(), 1u);
  EXPECT_TRUE(r.double_claims.empty());
  EXPECT_FALSE(r.ok());
}

TEST(delivery_log_checker, planted_an_acked_id_still_in_the_table_at_the_end_fails_the_final_state) {
  const std::vector<delivery_record> ds = {
      {"m0", 1, 10, true, "c"}, {"m1", 1, 20, true, "c"}, {"m2", 1, 30, false, "c"}};
  auto r = check_deliveries(three_in_one_group(), ds);
  ASSERT_TRUE(r.ok()) << r.summary();
  check_final_state(r, three_in_one_group(), {{"m1", "visible"}, {"m2", "visible"}}, "", false);
  ASSERT_EQ(r.final_state.size(), 1u) << r.summary();
  EXPECT_NE(r.final_state[0].find("m1"), std::string::npos);
  EXPECT_FALSE(r.ok());
}

TEST(delivery_log_checker, planted_a_produced_op_not_done_or_missing_at_the_end_fails_the_final_state) {
  auto r =
      check_deliveries(three_in_one_group(),
                       {{"m0", 1, 10, false, "w"}, {"m1", 1, 20, false, "w"}, {"m2", 1, 30, false, "w"}});
  ASSERT_TRUE(r.ok());
  check_final_state(r, three_in_one_group(), {{"m0", "done"}, {"m1", "running"}}, "done", true);
  EXPECT_EQ(r.final_state.size(), 2u) << r.summary();  // m1 running, m2 gone
  EXPECT_FALSE(r.ok());
  auto fine = check_deliveries(three_in_one_group(), {});
  check_final_state(fine, {}, {}, "done", true);
  EXPECT_TRUE(fine.final_state.empty());
}

TEST(delivery_log_checker,
     planted_a_group_message_handled_before_the_previous_ones_ack_was_sent_breaks_strict_order) {
  // m1 is handled (so claimed) at 15 ms, while m0's ack was only sent at
  // 100 ms: first-delivery order alone (m0 at 10, m1 at 15) cannot see it.
  delivery_record m0{"m0", 1, 10 * ms, true, "a"};
  m0.ack_started_ns = 100 * ms;
  delivery_record m1{"m1", 1, 15 * ms, true, "b"};
  m1.ack_started_ns = 200 * ms;
  delivery_record m2{"m2", 1, 300 * ms, true, "a"};
  m2.ack_started_ns = 310 * ms;
  const std::vector<delivery_record> ds = {m0, m1, m2};
  EXPECT_TRUE(check_deliveries(three_in_one_group(), ds, {.group_order = true}).ok());
  const auto r =
      check_deliveries(three_in_one_group(), ds, {.group_order = true, .strict_group_order = true});
  ASSERT_EQ(r.order_violations.size(), 1u) << r.summary();
  EXPECT_NE(r.order_violations[0].find("seq 1"), std::string::npos) << r.order_violations[0];
  EXPECT_FALSE(r.ok());
  auto after = ds;
  after[1].at_ns = 150 * ms;  // after m0's ack was sent
  EXPECT_TRUE(check_deliveries(three_in_one_group(), after, {.strict_group_order = true}).ok());
}

TEST(delivery_log_checker,
     planted_two_writers_on_one_key_delivered_against_the_stores_order_is_an_order_violation) {
  // Writers a and b both write key k; each one's log orders only its own
  // rows. The store committed b-0 before a-0, and the relay delivered a-0
  // first: only the store's positions reveal it.
  const std::vector<produced_record> logged = {{"a-0", "k", 0}, {"a-1", "k", 1}, {"b-0", "k", 0}};
  const std::vector<delivery_record> ds = {
      {"a-0", 1, 10, false, "r"}, {"b-0", 1, 20, false, "r"}, {"a-1", 1, 30, false, "r"}};
  const std::map<std::string, std::pair<std::string, std::int64_t>> store_order = {
      {"b-0", {"k", 1}}, {"a-0", {"k", 2}}, {"a-1", {"k", 3}}};
  const auto r = check_deliveries(resequenced(logged, store_order), ds, {.group_order = true});
  ASSERT_EQ(r.order_violations.size(), 1u) << r.summary();
  EXPECT_FALSE(r.ok());
  const std::vector<delivery_record> in_order = {
      {"b-0", 1, 10, false, "r"}, {"a-0", 1, 20, false, "r"}, {"a-1", 1, 30, false, "r"}};
  EXPECT_TRUE(check_deliveries(resequenced(logged, store_order), in_order, {.group_order = true}).ok());
}

TEST(delivery_log_checker, planted_a_corrupted_sqlite_file_fails_the_integrity_check) {
  temp_dir dir;
  const auto file = dir.path() / "torn.db";
  sqlite_exec(file.string(),
              "PRAGMA page_size = 4096; CREATE TABLE t (a TEXT); CREATE INDEX t_a ON t (a);"
              "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
              "INSERT INTO t SELECT printf('%0100d', i) FROM n;");
  ASSERT_EQ(sqlite_integrity(file.string()), "ok");
  {
    // Garble pages 9–12 (index and table pages), keeping the header.
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 * 8);
    const std::string junk(4096 * 4, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  EXPECT_NE(sqlite_integrity(file.string()), "ok");
}

}  // namespace
}  // namespace spool::test
