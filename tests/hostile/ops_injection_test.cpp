// SQL injection through every string of the op queue that reaches SQL
// (issue 7): type, id, dedup key, payload keys and values, owner, failure
// messages, lease tokens, list filters and cursors, and the table, schema and
// notify-channel options. Identifiers are refused unless valid; values are
// bound and round-trip byte for byte; nothing else changes.
#include "hostile/hostile_fixture.hpp"
#include "spool/ops/queue.hpp"

namespace spool::test {
namespace {

using hostile_ops = hostile;

// op-queue.md §3.1/§3.2: 1–255 bytes of UTF-8 without control characters.
bool valid_name(const std::string& s) { return !s.empty() && s.size() <= 255 && !has_control(s); }

TEST_P(hostile_ops, hostile_table_schema_and_channel_options_are_refused_as_invalid_identifiers) {
  const auto before = take_fingerprint();
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    for (const std::string setting : {"table", "schema", "notify_channel"}) {
      ops::queue_options o;
      if (setting == "table") o.table = s;
      if (setting == "schema") o.schema = s;
      if (setting == "notify_channel") o.notify_channel = s;
      o.migrate = true;  // even with migrations requested, no DDL runs
      try {
        ops::queue q(*db_, o);
        ADD_FAILURE() << setting << ": a hostile identifier was accepted";
      } catch (const spool::error& e) {
        EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
        EXPECT_EQ(e.reason(), "invalid_identifier") << e.what();
        EXPECT_NE(std::string(e.what()).find(setting == "notify_channel" ? "channel" : setting),
                  std::string::npos)
            << e.what();
      }
    }
    migrate_options mo;
    mo.ops_table = s;
    EXPECT_SPOOL_ERROR(spool::migrate(*db_, mo), errc::invalid_argument);
  }
  expect_only(before, take_fingerprint(), {}, "no hostile identifier changed anything");
}

TEST_P(hostile_ops, hostile_type_id_dedup_key_and_payload_are_stored_literally_or_refused) {
  ops::queue q(*db_);
  int n = 0;
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    const auto before = take_fingerprint();
    ops::new_op o;
    o.type = s;
    o.id = s;
    o.dedup_key = s;
    o.payload = nlohmann::json::object();
    o.payload[s] = s;
    const bool acceptable = valid_name(s);  // type and id; the NUL byte is a control character
    try {
      const auto r = q.enqueue(o);
      EXPECT_TRUE(acceptable);
      EXPECT_EQ(r.id, s);
    } catch (const spool::error& e) {
      EXPECT_FALSE(acceptable) << e.what();
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      expect_only(before, take_fingerprint(), {}, "a refused enqueue inserts nothing");
      // The dedup key and payload alone (a plain type and id) are still values.
      if (s.find('\0') != std::string::npos) continue;  // refused by §3.3 (payload) too
      o.type = "t";
      o.id = "op" + std::to_string(++n);
      q.enqueue(o);
    }
    expect_only(before, take_fingerprint(), {{"ops_queue", 1}}, "enqueue adds exactly one row");
    const auto got = q.get(o.id);
    EXPECT_EQ(got.type, o.type);
    EXPECT_EQ(got.dedup_key, std::optional<std::string>(s));
    EXPECT_EQ(got.payload, o.payload) << "payload keys and values round-trip";
    // A second enqueue with the same key is coalesced on the literal key.
    ops::new_op again = o;
    again.id.clear();
    EXPECT_SPOOL_ERROR(q.enqueue(again), errc::duplicate);
    // Claim it with a hostile owner, fail it with a hostile message.
    const auto claimed = q.dequeue({o.type}, acceptable ? s : std::string("owner"));
    ASSERT_TRUE(claimed.has_value());
    EXPECT_EQ(claimed->id, o.id);
    if (acceptable) EXPECT_EQ(claimed->lease_owner, std::optional<std::string>(s));
    EXPECT_EQ(q.fail(o.id, *claimed->lease_token, s, false), ops::op_status::failed);
    std::string sanitized = s;
    sanitized.erase(std::remove(sanitized.begin(), sanitized.end(), '\0'), sanitized.end());
    EXPECT_EQ(q.get(o.id).last_error, sanitized) << "the message is stored as given (NUL removed, §4.5)";
    db_->exec("DELETE FROM ops_queue WHERE id = " + p(1), {o.id});
    expect_only(before, take_fingerprint(), {}, "nothing else changed");
  }
}

TEST_P(hostile_ops, hostile_ids_tokens_owners_filters_and_cursors_match_nothing_or_are_refused) {
  ops::queue q(*db_);
  ops::new_op keep;
  keep.type = "t";
  keep.id = "keep";
  q.enqueue(keep);
  ops::new_op held_op;
  held_op.type = "h";
  held_op.id = "held";
  q.enqueue(held_op);
  const auto held = q.dequeue({"h"});
  ASSERT_TRUE(held.has_value());
  const auto before = take_fingerprint();
  const auto rows_before = db_->exec("SELECT * FROM ops_queue ORDER BY id");
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    const errc miss = refused_by_engine(s) ? errc::invalid_argument : errc::not_found;
    EXPECT_SPOOL_ERROR((void)q.get(s), miss);
    EXPECT_SPOOL_ERROR((void)q.cancel(s), miss);
    EXPECT_SPOOL_ERROR((void)q.retry(s), miss);
    EXPECT_SPOOL_ERROR(q.ack(s, s), miss);
    EXPECT_SPOOL_ERROR(q.heartbeat(s, s), miss);
    // The held op with a hostile token: fenced off.
    try {
      q.ack("held", s);
      ADD_FAILURE() << "a hostile token acked the held op";
    } catch (const spool::error& e) {
      EXPECT_TRUE(e.code() == errc::lease_lost ||
                  (refused_by_engine(s) && e.code() == errc::invalid_argument))
          << e.what();
    }
    try {
      const auto gone = q.heartbeat_batch({{"held", s}, {s, s}});
      EXPECT_EQ(gone.size(), 2u);
    } catch (const spool::error& e) {
      expect_nul_refusal(e, s);
    }
    // Type filters and owners: a claim with a hostile type claims nothing
    // (or is refused as an invalid type).
    try {
      EXPECT_FALSE(q.dequeue({s}, valid_name(s) ? s : std::string("o")).has_value());
      EXPECT_FALSE(q.has_ready({s}));
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
    // A hostile status filter matches nothing; a hostile cursor is refused.
    try {
      const auto page = q.list(s);
      EXPECT_TRUE(page.ops.empty());
      EXPECT_EQ(page.total, 0);
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
    EXPECT_SPOOL_ERROR((void)q.list_after("", 10, s), errc::invalid_argument);
  }
  EXPECT_EQ(db_->exec("SELECT * FROM ops_queue ORDER BY id"), rows_before) << "no row changed";
  expect_only(before, take_fingerprint(), {}, "nothing else changed");
  q.ack("held", *held->lease_token);  // the real lease still holds
}

TEST_P(hostile_ops, a_hostile_owner_option_is_the_literal_lease_owner_of_every_claim) {
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    ops::queue_options o;
    o.owner = s;
    try {
      ops::queue q(*db_, o);
      const auto id = q.enqueue(ops::new_op{.type = "t"}).id;
      const auto claimed = q.dequeue({"t"});
      ASSERT_TRUE(claimed.has_value());
      EXPECT_EQ(claimed->lease_owner, std::optional<std::string>(s));
      EXPECT_EQ(q.get(id).lease_owner, std::optional<std::string>(s));
      q.ack(id, *claimed->lease_token);
    } catch (const spool::error& e) {
      // Owners follow the rule of names: 1–255 bytes, no control characters.
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_FALSE(valid_name(s)) << e.what();
    }
  }
  EXPECT_EQ(count_rows("ops_queue"), count_rows("ops_queue WHERE status = 'done'"));
}

SPOOL_HOSTILE_BOTH_ENGINES(hostile_ops);

}  // namespace
}  // namespace spool::test
