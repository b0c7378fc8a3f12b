// SQL injection through every string of the outbox that reaches SQL (issue
// 7): id, topic, ordering and idempotency keys, metadata keys and values,
// payload, claim owner, inspect filters and cursors, replay ids, requester and
// reason, failure codes, and the table, schema, audit-table and channel
// options. Identifiers are refused unless valid; values are bound and
// round-trip byte for byte; nothing else changes.
#include "hostile/hostile_fixture.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;

class hostile_outbox : public hostile {
 protected:
  std::vector<outbox::insert_result> write(const std::vector<outbox::envelope>& batch,
                                           const outbox::writer_options& o = {}) {
    outbox::writer w(*db_, o);
    if (is_pg()) {
      pg::tx tx(*db_);
      auto r = w.insert_batch(tx, batch);
      tx.commit();
      return r;
    }
    sqlite::tx tx(*db_);
    auto r = w.insert_batch(tx, batch);
    tx.commit();
    return r;
  }
};

// outbox.md §2.2: ids, topics and keys at most 255 bytes and no NUL.
bool valid_value(const std::string& s) { return s.size() <= 255 && s.find('\0') == std::string::npos; }

TEST_P(hostile_outbox, hostile_table_schema_audit_and_channel_options_are_refused_as_invalid_identifiers) {
  const auto before = take_fingerprint();
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    for (const std::string setting : {"schema", "table", "audit_table", "notify_channel"}) {
      outbox::outbox_config c;
      if (setting == "schema") c.schema = s;
      if (setting == "table") c.table = s;
      if (setting == "audit_table") c.audit_table = s;
      if (setting == "notify_channel") c.notify_channel = s;
      auto refused = [&](auto&& fn) {
        try {
          fn();
          ADD_FAILURE() << setting << ": a hostile identifier was accepted";
        } catch (const spool::error& e) {
          EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
          // SQLite has one schema, "main": anything else is invalid_config there.
          const bool sqlite_schema = setting == "schema" && !is_pg() && e.reason() == "invalid_config";
          EXPECT_TRUE(e.reason() == "invalid_identifier" || sqlite_schema) << e.what();
          EXPECT_NE(std::string(e.what()).find(setting), std::string::npos) << e.what();
        }
      };
      refused([&] { outbox::validate(c); });
      refused([&] { (void)outbox::migrate(*db_, c); });
      refused([&] { (void)outbox::migrations(GetParam(), c); });
      outbox::writer_options wo;
      wo.config = c;
      refused([&] { outbox::writer w(*db_, wo); });
      outbox::store_options so;
      so.config = c;
      refused([&] { outbox::store st(*db_, so); });
    }
    migrate_options mo;
    mo.outbox_table = s;
    EXPECT_SPOOL_ERROR(spool::migrate(*db_, mo), errc::invalid_argument);
    mo.outbox_table.clear();
    mo.outbox_audit_table = s;
    EXPECT_SPOOL_ERROR(spool::migrate(*db_, mo), errc::invalid_argument);
  }
  expect_only(before, take_fingerprint(), {}, "no hostile identifier changed anything");
}

TEST_P(hostile_outbox, hostile_envelope_fields_round_trip_through_write_claim_inspect_and_replay) {
  outbox::store st(*db_);
  int n = 0;
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    const auto before = take_fingerprint();
    outbox::envelope e;
    e.id = s;
    e.topic = s;
    e.ordering_key = s;
    e.idempotency_key = s;
    e.metadata[s] = s;
    e.payload = s;  // opaque bytes: always stored byte for byte
    if (valid_value(s)) {
      write({e});
    } else {
      try {
        write({e});
        ADD_FAILURE() << "an invalid envelope was written";
      } catch (const spool::error& err) {
        EXPECT_EQ(err.code(), errc::invalid_argument) << err.what();
        EXPECT_TRUE(err.reason() == "invalid_encoding" || err.reason() == "id_too_large") << err.reason();
      }
      expect_only(before, take_fingerprint(), {}, "a refused write inserts nothing");
      // Plain names; the payload (and metadata without NUL) stay hostile.
      e.id = "e" + std::to_string(++n);
      e.topic = "t";
      e.ordering_key = "k";
      e.idempotency_key = e.id;
      e.metadata.clear();
      if (s.find('\0') == std::string::npos) e.metadata[s] = s;
      write({e});
    }
    expect_only(before, take_fingerprint(), {{"outbox_messages", 1}}, "write adds exactly one row");

    // The owner is a bound value too (at most 255 bytes).
    const std::string owner = valid_value(s) ? s : std::string("relay");
    const auto got = st.claim(owner, 10, 60s);
    ASSERT_EQ(got.size(), 1u);
    const auto& m = got[0].message;
    EXPECT_EQ(m.id, e.id);
    EXPECT_EQ(m.topic, e.topic);
    EXPECT_EQ(m.ordering_key, e.ordering_key);
    EXPECT_EQ(m.idempotency_key, e.idempotency_key);
    EXPECT_EQ(m.metadata, e.metadata);
    EXPECT_EQ(m.payload, e.payload) << "payload bytes round-trip exactly";
    EXPECT_EQ(got[0].owner, owner);
    st.mark_delivered(got[0].ref);

    // Inspect filters by the literal topic; a hostile cursor is refused.
    outbox::inspect_query q;
    q.topic = e.topic;
    const auto page = st.inspect(q);
    ASSERT_EQ(page.messages.size(), 1u);
    EXPECT_EQ(page.messages[0].id, e.id);
    outbox::inspect_query hq;
    hq.topic = s;
    hq.before = s;
    EXPECT_SPOOL_ERROR((void)st.inspect(hq), errc::invalid_argument);

    // Replay by the literal id, audited with a hostile requester and reason.
    outbox::replay_request r;
    r.ids = {e.id};
    r.requested_by = owner;
    r.reason = s.find('\0') == std::string::npos ? s : std::string("reason");
    const auto replayed = st.replay(r);
    ASSERT_EQ(replayed.items.size(), 1u);
    EXPECT_EQ(replayed.items[0].first, e.id);
    const auto audit =
        db_->exec("SELECT requested_by, reason FROM outbox_messages_replay_audit WHERE replay_id = " + p(1),
                  {replayed.replay_id});
    ASSERT_FALSE(audit.empty());
    EXPECT_EQ(*audit[0][0], owner);
    EXPECT_EQ(*audit[0][1], r.reason);
    db_->exec("DELETE FROM outbox_messages WHERE id = " + p(1), {e.id});
    expect_only(before, take_fingerprint(), {{"outbox_messages_replay_audit", +1}},
                "replay adds its audit only");
  }
}

TEST_P(hostile_outbox, hostile_replay_ids_owners_failure_codes_and_lease_tokens_change_nothing) {
  write({[] {
    outbox::envelope e;
    e.id = "keep";
    e.topic = "t";
    e.payload = "{}";
    return e;
  }()});
  outbox::store st(*db_);
  const auto held = st.claim("relay", 1, 60s);
  ASSERT_EQ(held.size(), 1u);
  const auto before = take_fingerprint();
  const auto row_before = db_->exec("SELECT * FROM outbox_messages");
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    outbox::replay_request r;
    r.ids = {s};
    r.requested_by = "ops";
    r.reason = "hostile";
    try {
      (void)st.replay(r);
      ADD_FAILURE() << "a replay of a hostile id succeeded";
    } catch (const outbox::replay_conflict& c) {
      ASSERT_EQ(c.items().size(), 1u);
      EXPECT_EQ(c.items()[0].first, s);
      EXPECT_EQ(c.items()[0].second, outbox::replay_item_status::missing);
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
    // A hostile token never reaches the held row.
    // (Tokens are at most 36 bytes and ids 255: longer ones are refused.)
    const outbox::lease_ref forged{"keep", s};
    const bool refused = s.size() > 36 || refused_by_engine(s);
    const errc fenced = refused ? errc::invalid_argument : errc::lease_lost;
    EXPECT_SPOOL_ERROR(st.mark_delivered(forged), fenced);
    EXPECT_SPOOL_ERROR(st.release_lease(forged), fenced);
    EXPECT_SPOOL_ERROR((void)st.extend_lease(forged, 60s), fenced);
    if (!refused) {
      EXPECT_EQ(st.check_lease(forged), outbox::lease_fate::replaced);
      EXPECT_EQ(st.check_lease({s, s}), outbox::lease_fate::missing);
    } else {
      EXPECT_SPOOL_ERROR((void)st.check_lease(forged), errc::invalid_argument);
    }
    // A failure with a hostile code and message under a forged lease is
    // refused (a code outside [a-z0-9_.]{1,64}) or fenced; a claim by a
    // hostile owner finds nothing to take.
    try {
      st.dead_letter(forged, {s, s});
      ADD_FAILURE() << "a forged lease dead-lettered the row";
    } catch (const spool::error& e) {
      EXPECT_TRUE(e.code() == errc::invalid_argument || e.code() == errc::lease_lost) << e.what();
    }
    try {
      EXPECT_TRUE(st.claim(s, 10, 60s).empty());
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
  }
  EXPECT_EQ(db_->exec("SELECT * FROM outbox_messages"), row_before) << "the held row is untouched";
  expect_only(before, take_fingerprint(), {}, "nothing else changed");
  st.mark_delivered(held[0].ref);
}

SPOOL_HOSTILE_BOTH_ENGINES(hostile_outbox);

}  // namespace
}  // namespace spool::test
