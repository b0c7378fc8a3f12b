// A row that cannot be decoded (outbox.md §6.1 step 6): only manual edits
// that dropped the schema's checks make one. A claim dead-letters it in its
// own transaction, with code 'undecodable', and leases the rest of the batch.
#include <set>

#include "outbox_fixture.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

class outbox_undecodable : public outbox_conformance {
 protected:
  // Makes rows b and c undecodable with values the schema refuses, so its
  // rules go first, as a careless manual edit would drop them. b's metadata
  // gets a number. On PostgreSQL c's payload_version becomes 0; SQLite cannot
  // drop a CHECK (and would refuse the dead-lettering UPDATE of such a row), so
  // there c's metadata gets an object.
  void corrupt(const std::string& b, const std::string& c) {
    if (is_pg()) {
      db_->exec(
          "ALTER TABLE outbox_messages DROP CONSTRAINT outbox_messages_payload_version_check, "
          "DROP CONSTRAINT outbox_messages_metadata_check");
      db_->exec("UPDATE outbox_messages SET metadata = '{\"n\": 1}' WHERE id = $1", {b});
      db_->exec("UPDATE outbox_messages SET payload_version = 0 WHERE id = $1", {c});
    } else {
      sqlite_exec(uri_,
                  "DROP TRIGGER outbox_messages_meta_upd; "
                  "UPDATE outbox_messages SET metadata = '{\"n\": 1}' WHERE id = '" +
                      b +
                      "'; "
                      "UPDATE outbox_messages SET metadata = '{\"n\": {\"m\": \"x\"}}' WHERE id = '" +
                      c + "';");
    }
  }

  // Read by SQL: get() decodes, and these rows do not decode.
  void expect_dead_undecodable(const std::string& id) {
    const auto r =
        db_->exec(is_pg() ? "SELECT state, last_error_code, lease_owner FROM outbox_messages WHERE id = $1"
                          : "SELECT state, last_error_code, lease_owner FROM outbox_messages WHERE id = ?1",
                  {id});
    ASSERT_EQ(r.size(), 1u) << id;
    EXPECT_EQ(r[0][0].value_or(""), "dead") << id;
    EXPECT_EQ(r[0][1].value_or(""), "undecodable") << id;
    EXPECT_FALSE(r[0][2].has_value()) << id;
  }

  // The id of the transaction that last wrote each row (PostgreSQL's xmin).
  std::set<std::string> writers_of(const std::vector<std::string>& ids) {
    std::set<std::string> out;
    for (const auto& id : ids) {
      out.insert(*db_->exec("SELECT xmin::text FROM outbox_messages WHERE id = $1", {id}).at(0).at(0));
    }
    return out;
  }
};

TEST_P(outbox_undecodable, a_claim_dead_letters_undecodable_rows_in_its_own_transaction_and_leases_the_rest) {
  write({env("a"), env("b"), env("c"), env("d")});
  corrupt("b", "c");
  auto s = make_store();
  const auto got = s.claim("relay", 10, std::chrono::seconds(30));
  std::vector<std::string> ids;
  for (const auto& m : got) ids.push_back(m.message.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "d"}));
  expect_dead_undecodable("b");
  expect_dead_undecodable("c");
  EXPECT_EQ(state_of("a"), "leased");
  EXPECT_EQ(state_of("d"), "leased");
  // One transaction wrote all four: the leases and the dead letters commit
  // or roll back together.
  if (is_pg()) EXPECT_EQ(writers_of({"a", "b", "c", "d"}).size(), 1u);
  // The leases work, and nothing is claimed twice.
  for (const auto& m : got) s.mark_delivered(m.ref);
  EXPECT_TRUE(s.claim("relay", 10, std::chrono::seconds(30)).empty());
  EXPECT_EQ(count("state = 'delivered'"), 2);
  EXPECT_EQ(count("state = 'dead'"), 2);
}

TEST_P(outbox_undecodable, an_undecodable_head_is_dead_lettered_and_releases_its_successor_in_order) {
  write({env("k1", "t", "k"), env("k2", "t", "k"), env("k3", "t", "k"), env("k4", "t", "k")});
  corrupt("k1", "k3");
  auto s = make_store();
  // k1 is the head: the claim dead-letters it and leases nothing of k.
  EXPECT_TRUE(s.claim("relay", 10, std::chrono::seconds(30), serialization::by_ordering_key).empty());
  expect_dead_undecodable("k1");
  const auto k2 = s.claim("relay", 10, std::chrono::seconds(30), serialization::by_ordering_key);
  ASSERT_EQ(k2.size(), 1u);
  EXPECT_EQ(k2[0].message.id, "k2");
  // Delivering k2 claims the next of k in the same transaction: k3 is
  // dead-lettered there, and k4 waits for the next claim.
  EXPECT_FALSE(s.mark_delivered_and_claim_next(k2[0].ref, std::chrono::seconds(30)).has_value());
  expect_dead_undecodable("k3");
  if (is_pg()) EXPECT_EQ(writers_of({"k2", "k3"}).size(), 1u);
  const auto k4 = s.claim("relay", 10, std::chrono::seconds(30), serialization::by_ordering_key);
  ASSERT_EQ(k4.size(), 1u);
  EXPECT_EQ(k4[0].message.id, "k4");
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_undecodable);

}  // namespace
}  // namespace spool::test
