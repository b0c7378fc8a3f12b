// SQL injection through every string of the message queue that reaches SQL
// (issue 7): queue names, message ids, groups, receipts, every payload field,
// redrive inputs and the schema option. Identifiers from configuration are
// refused unless valid; values are bound parameters and round-trip byte for
// byte; either way nothing else in the database changes.
#include <nlohmann/json.hpp>

#include "hostile/hostile_fixture.hpp"
#include "spool/mq/queue.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;
using hostile_mq = hostile;

mq::message plain(std::string id) {
  mq::message m;
  m.id = std::move(id);
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.test/hook";
  return m;
}

mq::queue_options named(std::string name) {
  mq::queue_options o;
  o.name = std::move(name);
  o.poll_interval = 50ms;
  return o;
}

TEST_P(hostile_mq, a_hostile_queue_name_is_a_literal_value_on_publish_poll_and_ack) {
  // A bystander queue whose message must survive every attempt.
  mq::queue bystander(*db_, named("bystander"));
  bystander.publish(plain("keep"));
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    const auto before = take_fingerprint();
    mq::queue q(*db_, named(s));
    try {
      q.publish(plain("m1"));
    } catch (const spool::error& e) {
      expect_nul_refusal(e, s);
      expect_only(before, take_fingerprint(), {}, "a refused publish inserts nothing");
      continue;
    }
    EXPECT_FALSE(refused_by_engine(s));
    const auto stored =
        db_->exec("SELECT queue_name FROM queue_messages WHERE id = " + p(1), {std::string("m1")});
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(*stored[0][0], s) << "the queue name is stored byte for byte";
    expect_only(before, take_fingerprint(), {{"queue_messages", 1}}, "publish adds exactly one row");

    const auto got = q.poll(10);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].queue, s);
    EXPECT_EQ(got[0].broker_message_id, "m1");
    q.ack(got[0].receipt);
    EXPECT_EQ(q.metrics().pending, 0);
    expect_only(before, take_fingerprint(), {}, "publish then ack leaves the database as it was");
  }
  const auto kept = bystander.poll(10);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].broker_message_id, "keep");
}

TEST_P(hostile_mq, a_hostile_schema_option_is_refused_as_an_invalid_identifier_naming_the_setting) {
  const auto before = take_fingerprint();
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    auto o = named("q");
    o.schema = s;
    try {
      mq::queue q(*db_, o);
      ADD_FAILURE() << "a hostile schema was accepted";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_EQ(e.reason(), "invalid_identifier") << e.what();
      EXPECT_NE(std::string(e.what()).find("schema"), std::string::npos) << e.what();
    }
    mq::insert_options io;
    io.schema = s;
    const std::vector<mq::batch_row> rows = {{"q", plain("x")}};
    if (is_pg()) {
      pg::tx tx(*db_);
      EXPECT_SPOOL_ERROR(mq::insert_batch(tx, rows, io), errc::invalid_argument);
    } else {
      sqlite::tx tx(*db_);
      EXPECT_SPOOL_ERROR(mq::insert_batch(tx, rows, io), errc::invalid_argument);
    }
  }
  expect_only(before, take_fingerprint(), {}, "no hostile schema changed anything");
}

// Every string of the wire message (§3.1), each in turn set to a hostile
// value, round-trips through publish and poll byte for byte; id and group
// also land in their columns literally.
TEST_P(hostile_mq, every_message_field_carries_a_hostile_value_byte_for_byte) {
  mq::queue q(*db_, named("q"));
  using setter = void (*)(mq::message&, const std::string&);
  const std::vector<std::pair<std::string, setter>> fields = {
      {"id", [](mq::message& m, const std::string& v) { m.id = v; }},
      {"messageGroupId", [](mq::message& m, const std::string& v) { m.message_group_id = v; }},
      {"poolCode", [](mq::message& m, const std::string& v) { m.pool_code = v; }},
      {"authToken", [](mq::message& m, const std::string& v) { m.auth_token = v; }},
      {"signingSecret", [](mq::message& m, const std::string& v) { m.signing_secret = v; }},
      {"mediationType", [](mq::message& m, const std::string& v) { m.mediation_type = v; }},
      {"mediationTarget", [](mq::message& m, const std::string& v) { m.mediation_target = v; }},
      {"dispatchMode", [](mq::message& m, const std::string& v) { m.dispatch_mode = v; }},
      {"extra key",
       [](mq::message& m, const std::string& v) {
         m.extra.push_back({"x" + v, "1"});
       }},
      {"extra value",
       [](mq::message& m, const std::string& v) {
         m.extra.push_back({"x", nlohmann::json(v).dump()});
       }},
  };
  int n = 0;
  for (const auto& [field, set] : fields) {
    for (const auto& s : hostile_strings()) {
      SCOPED_TRACE(field + " = " + shown(s));
      auto m = plain("id" + std::to_string(++n));
      set(m, s);
      const auto before = take_fingerprint();
      try {
        q.publish(m);
      } catch (const spool::error& e) {
        // Only an id or group with a NUL byte on PostgreSQL (the payload
        // escapes it as \u0000).
        EXPECT_TRUE(field == "id" || field == "messageGroupId") << e.what();
        expect_nul_refusal(e, s);
        expect_only(before, take_fingerprint(), {}, "a refused publish inserts nothing");
        continue;
      }
      expect_only(before, take_fingerprint(), {{"queue_messages", 1}}, "publish adds exactly one row");
      const auto stored = db_->exec(
          "SELECT id, message_group_id FROM queue_messages WHERE queue_name = " + p(1), {std::string("q")});
      ASSERT_EQ(stored.size(), 1u);
      EXPECT_EQ(*stored[0][0], m.id) << "the id column holds the id byte for byte";
      EXPECT_EQ(stored[0][1], m.message_group_id) << "the group column holds the group byte for byte";
      const auto got = q.poll(10);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].body, m) << "the message round-trips byte for byte";
      EXPECT_EQ(got[0].broker_message_id, m.id);
      EXPECT_EQ(got[0].group, m.message_group_id);
      q.ack(got[0].receipt, got[0].broker_message_id);
      expect_only(before, take_fingerprint(), {}, "ack removes exactly that row");
    }
  }
}

TEST_P(hostile_mq, hostile_receipts_are_refused_or_match_nothing_and_leave_claims_alone) {
  mq::queue q(*db_, named("q"));
  q.publish(plain("held"));
  const auto claim = q.poll(1);
  ASSERT_EQ(claim.size(), 1u);
  const auto before = take_fingerprint();
  const auto row_before = db_->exec("SELECT receipt_handle, visible_at, receive_count FROM queue_messages");
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    // Not "<uuid>:<id>": refused before any statement.
    EXPECT_SPOOL_ERROR(q.ack(s), errc::invalid_argument);
    EXPECT_SPOOL_ERROR((void)q.nack(s), errc::invalid_argument);
    EXPECT_SPOOL_ERROR((void)q.defer(s), errc::invalid_argument);
    EXPECT_SPOOL_ERROR(q.extend_visibility(s, 60s), errc::invalid_argument);
    // Well-formed, with a hostile id part: a bound value that matches nothing.
    const std::string receipt = "0190a6f0-0000-7000-8000-000000000000:" + s;
    // (With a NUL byte, PostgreSQL refuses the value: invalid_argument.)
    const errc miss = refused_by_engine(s) ? errc::invalid_argument : errc::not_found;
    EXPECT_SPOOL_ERROR(q.ack(receipt, s), miss);
    EXPECT_SPOOL_ERROR(q.extend_visibility(receipt, 60s), miss);
    // The real claim's uuid with a hostile id must not reach the held row
    // either. (broker_message_id is ignored by ack, §5.3.)
    const std::string uuid_part = claim[0].receipt.substr(0, 37);
    EXPECT_SPOOL_ERROR(q.ack(uuid_part + s), miss);
    if (refused_by_engine(s)) {
      EXPECT_SPOOL_ERROR((void)q.nack(receipt), errc::invalid_argument);
      EXPECT_SPOOL_ERROR((void)q.defer(receipt), errc::invalid_argument);
      EXPECT_SPOOL_ERROR((void)q.ack_batch({receipt}), errc::invalid_argument);
      continue;
    }
    EXPECT_FALSE(q.nack(receipt));
    EXPECT_FALSE(q.defer(receipt));
    const auto acks = q.ack_batch({receipt, uuid_part + s});
    EXPECT_EQ(acks, (std::vector<mq::ack_status>{mq::ack_status::not_found, mq::ack_status::not_found}));
  }
  EXPECT_EQ(db_->exec("SELECT receipt_handle, visible_at, receive_count FROM queue_messages"), row_before);
  expect_only(before, take_fingerprint(), {}, "no hostile receipt changed anything");
  q.ack(claim[0].receipt);  // the real claim still holds
}

TEST_P(hostile_mq, hostile_redrive_ids_reason_and_actor_are_bound_values) {
  mq::queue q(*db_, named("q"));
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    const auto before = take_fingerprint();
    mq::redrive_options o;
    o.ids = {s};
    o.reason = s;
    o.actor = s;
    try {
      const auto r = q.redrive(o);
      EXPECT_TRUE(r.redriven.empty());
      EXPECT_EQ(r.missing, std::vector<std::string>{s});
    } catch (const spool::error& e) {
      expect_nul_refusal(e, s);
    }
    // A redrive that moved nothing may still be audited; nothing else changes.
    auto after = take_fingerprint();
    after[table_key("spool_mq_redrive_log")] = before.at(table_key("spool_mq_redrive_log"));
    EXPECT_EQ(after, before);
  }
  // A quarantined row with a hostile id and reason is redriven literally.
  const std::string s = "'; DROP TABLE queue_messages; --";
  db_->exec(
      "INSERT INTO queue_messages_failed (id, queue_name, payload, error_message, created_at, failed_at) "
      "VALUES (" +
          p(1) + ", 'q', " + p(2) + ", 'x', 0, 0)",
      {s, std::string("{\"id\":\"x\"}")});
  mq::redrive_options o;
  o.ids = {s};
  o.reason = s;
  o.actor = s;
  const auto r = q.redrive(o);
  EXPECT_EQ(r.redriven, std::vector<std::string>{s});
  EXPECT_EQ(count_rows("queue_messages"), 1);
  const auto audit = db_->exec("SELECT id, actor, reason FROM spool_mq_redrive_log WHERE id = " + p(1), {s});
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(*audit[0][1], s);
  EXPECT_EQ(*audit[0][2], s);
}

SPOOL_HOSTILE_BOTH_ENGINES(hostile_mq);

}  // namespace
}  // namespace spool::test
