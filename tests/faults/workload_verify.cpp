// The fault workload's verdict: what was acknowledged, in doubt, delivered
// and drained, compared to find anything lost or delivered twice.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>

#include "faults/workload_state.hpp"
#include "spool/pg.hpp"

namespace spool::test::faults {

fault_report workload::verify(const std::string& fault) {
  std::lock_guard lock(s_->m);
  auto& s = *s_;
  fault_report r;

  // Every call failed only as unavailable or in_doubt.
  const std::vector<std::pair<std::string, const call_tally*>> tallies = {
      {"mq publish", &s.mq_publish},
      {"ops enqueue", &s.ops_enqueue},
      {"outbox insert+commit", &s.outbox_insert},
      {"mq poll", &s.mq_poll},
      {"mq ack", &s.mq_ack},
      {"ops dequeue", &s.ops_dequeue},
      {"ops ack", &s.ops_ack},
      {"outbox claim", &s.outbox_claim},
      {"outbox mark_delivered", &s.outbox_deliver},
      {"after the fault", &s.recover}};
  for (const auto& [name, t] : tallies) {
    EXPECT_TRUE(t->unexpected.empty())
        << name << " failed with something other than unavailable or in_doubt: " << t->unexpected.front();
    r.recoveries += t->recoveries;
    for (const auto& [reason, n] : t->reasons) r.reasons[reason] += n;
  }

  // mq: every acknowledged publish was consumed (ack returned success or
  // in_doubt during the run, or the drain acked it); an unavailable publish
  // was never delivered; nothing came back after its ack returned success.
  const auto mq_accounted = either(either(s.mq_acked, s.mq_ack_doubt), s.mq_drained);
  const auto mq_lost = minus(s.mq_ok, mq_accounted);
  EXPECT_TRUE(mq_lost.empty()) << mq_lost.size() << " acknowledged mq publishes lost: " << join_some(mq_lost);
  const auto mq_phantom = both(s.mq_absent, s.mq_delivered);
  EXPECT_TRUE(mq_phantom.empty()) << "publishes reported unavailable were delivered: "
                                  << join_some(mq_phantom);
  const auto mq_unknown = minus(s.mq_delivered, either(s.mq_ok, s.mq_doubt));
  EXPECT_TRUE(mq_unknown.empty()) << "delivered ids nobody published: " << join_some(mq_unknown);
  EXPECT_TRUE(s.mq_redelivered.empty())
      << s.mq_redelivered.size() << " mq messages delivered again after their ack returned success, e.g. "
      << s.mq_redelivered.front();
  const auto mq_left = db_.exec("SELECT count(*) FROM queue_messages WHERE queue_name = 'faults'");
  EXPECT_EQ(mq_left.at(0).at(0).value_or("?"), "0") << "rows left in queue_messages after the drain";
  const auto mq_doubt_present = both(s.mq_doubt, s.mq_delivered).size();

  // ops: every acknowledged enqueue is stored and done; an unavailable
  // enqueue is not stored; nothing was claimed again after its ack.
  std::map<std::string, std::string> ops_rows;
  for (const auto& row : db_.exec("SELECT id, status FROM ops_queue WHERE type = $1", {op_type})) {
    ops_rows.emplace(row.at(0).value_or(""), row.at(1).value_or(""));
  }
  std::set<std::string> ops_lost, ops_not_done, ops_phantom;
  std::size_t ops_doubt_present = 0;
  for (const auto& id : s.ops_ok) {
    const auto it = ops_rows.find(id);
    if (it == ops_rows.end()) {
      ops_lost.insert(id);
    } else if (it->second != "done") {
      ops_not_done.insert(id + " (" + it->second + ")");
    }
  }
  for (const auto& id : s.ops_absent)
    if (ops_rows.count(id)) ops_phantom.insert(id);
  for (const auto& id : s.ops_doubt) ops_doubt_present += ops_rows.count(id);
  EXPECT_TRUE(ops_lost.empty()) << ops_lost.size() << " acknowledged enqueues lost: " << join_some(ops_lost);
  EXPECT_TRUE(ops_not_done.empty()) << "acknowledged ops not done after the drain: "
                                    << join_some(ops_not_done);
  EXPECT_TRUE(ops_phantom.empty()) << "enqueues reported unavailable were stored: " << join_some(ops_phantom);
  EXPECT_TRUE(s.ops_redelivered.empty())
      << s.ops_redelivered.size() << " ops claimed again after their ack returned success, e.g. "
      << s.ops_redelivered.front();

  // outbox: every committed envelope is stored; one whose transaction failed
  // before COMMIT (or whose COMMIT was unavailable) is not.
  std::set<std::string> outbox_rows;
  for (const auto& row : db_.exec("SELECT id FROM " + outbox_table_))
    outbox_rows.insert(row.at(0).value_or(""));
  const auto outbox_lost = minus(s.outbox_ok, outbox_rows);
  const auto outbox_phantom = both(s.outbox_absent, outbox_rows);
  EXPECT_TRUE(outbox_lost.empty()) << outbox_lost.size()
                                   << " committed outbox envelopes lost: " << join_some(outbox_lost);
  EXPECT_TRUE(outbox_phantom.empty())
      << "envelopes of transactions that never committed are stored: " << join_some(outbox_phantom);
  const auto outbox_doubt_present = both(s.outbox_doubt, outbox_rows).size();
  // Every stored envelope was delivered (during the run or by the drain),
  // none was claimed again after mark_delivered returned success, and only
  // written envelopes were claimed.
  const auto outbox_undelivered =
      db_.exec("SELECT count(*) FROM " + outbox_table_ + " WHERE state <> 'delivered'");
  EXPECT_EQ(outbox_undelivered.at(0).at(0).value_or("?"), "0")
      << "envelopes left undelivered after the drain";
  EXPECT_TRUE(s.outbox_redelivered.empty())
      << s.outbox_redelivered.size()
      << " envelopes claimed again after mark_delivered returned success, e.g. "
      << s.outbox_redelivered.front();
  const auto outbox_unknown = minus(s.outbox_claimed, either(s.outbox_ok, s.outbox_doubt));
  EXPECT_TRUE(outbox_unknown.empty()) << "claimed envelopes nobody committed: " << join_some(outbox_unknown);

  r.acknowledged = s.mq_ok.size() + s.ops_ok.size() + s.outbox_ok.size();
  r.in_doubt = s.mq_doubt.size() + s.ops_doubt.size() + s.outbox_doubt.size();
  r.in_doubt_present = mq_doubt_present + ops_doubt_present + outbox_doubt_present;
  r.unavailable = s.mq_absent.size() + s.ops_absent.size() + s.outbox_absent.size();
  r.lost = mq_lost.size() + ops_lost.size() + outbox_lost.size();
  r.redelivered_after_ack = s.mq_redelivered.size() + s.ops_redelivered.size() + s.outbox_redelivered.size();

  auto reasons = [](const call_tally& t) {
    std::string out;
    for (const auto& [k, v] : t.reasons) out += fmt::format("{}{}×{}", out.empty() ? "" : ", ", v, k);
    return out.empty() ? std::string("none") : out;
  };
  fmt::print("[faults] {}\n", fault);
  fmt::print(
      "[faults]   mq publish: {} acknowledged, {} in_doubt ({} present), {} unavailable; {} lost [{}]\n",
      s.mq_ok.size(), s.mq_doubt.size(), mq_doubt_present, s.mq_absent.size(), mq_lost.size(),
      reasons(s.mq_publish));
  fmt::print(
      "[faults]   mq consume: {} acked, {} ack in_doubt, {} drained after; {} delivered again after an ack "
      "[poll: {}; ack: {}]\n",
      s.mq_acked.size(), s.mq_ack_doubt.size(), s.mq_drained.size(), s.mq_redelivered.size(),
      reasons(s.mq_poll), reasons(s.mq_ack));
  fmt::print(
      "[faults]   ops enqueue: {} acknowledged, {} in_doubt ({} present), {} unavailable; {} lost [{}]\n",
      s.ops_ok.size(), s.ops_doubt.size(), ops_doubt_present, s.ops_absent.size(), ops_lost.size(),
      reasons(s.ops_enqueue));
  fmt::print(
      "[faults]   ops consume: {} acked, {} ack in_doubt, {} drained after; {} claimed again after an ack "
      "[dequeue: {}; ack: {}]\n",
      s.ops_acked.size(), s.ops_ack_doubt.size(), s.ops_drained.size(), s.ops_redelivered.size(),
      reasons(s.ops_dequeue), reasons(s.ops_ack));
  fmt::print(
      "[faults]   outbox insert+commit: {} acknowledged, {} in_doubt ({} present), {} not committed; {} lost "
      "[{}]\n",
      s.outbox_ok.size(), s.outbox_doubt.size(), outbox_doubt_present, s.outbox_absent.size(),
      outbox_lost.size(), reasons(s.outbox_insert));
  fmt::print(
      "[faults]   outbox consume: {} delivered, {} in_doubt, {} drained after; {} claimed again after "
      "delivery "
      "[claim: {}; mark_delivered: {}]\n",
      s.outbox_delivered.size(), s.outbox_deliver_doubt.size(), s.outbox_drained.size(),
      s.outbox_redelivered.size(), reasons(s.outbox_claim), reasons(s.outbox_deliver));
  fmt::print(
      "[faults]   total: {} lost of {} acknowledged; {} in_doubt ({} present, {} absent); {} unavailable; "
      "{} recoveries on the same objects; {} delivered again after an ack\n",
      r.lost, r.acknowledged, r.in_doubt, r.in_doubt_present, r.in_doubt - r.in_doubt_present, r.unavailable,
      r.recoveries, r.redelivered_after_ack);
  std::fflush(stdout);
  ::testing::Test::RecordProperty("acknowledged", static_cast<int>(r.acknowledged));
  ::testing::Test::RecordProperty("lost", static_cast<int>(r.lost));
  ::testing::Test::RecordProperty("in_doubt", static_cast<int>(r.in_doubt));
  ::testing::Test::RecordProperty("recoveries", static_cast<int>(r.recoveries));
  return r;
}

}  // namespace spool::test::faults
