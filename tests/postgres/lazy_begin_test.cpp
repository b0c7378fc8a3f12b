// A spool::pg::tx sends its BEGIN with its first statement, in the same round
// trip, instead of a round trip of its own (issue 13: an outbox writer's W1
// made three, BEGIN, INSERT and COMMIT). What a caller sees must not change:
// the block exists from the first statement on, a failed first statement
// aborts it, and a transaction that ran nothing commits or rolls back without
// a word to the server. Seen from another session through pg_stat_activity,
// which a backend updates before it answers.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/outbox/envelope.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "support/eventually.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

// How many of Spool's backends on uri's database are in state `state`.
long in_state(database& observer, const std::string& state) {
  return std::stol(*observer
                        .exec("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                              "AND application_name = 'spool' AND pid <> pg_backend_pid() AND state = $1",
                              {state})
                        .at(0)
                        .at(0));
}

class lazy_begin : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = make_pg_database("lazy_begin");
    db_.emplace(database::open(uri_, {.pool_size = 2}));
    observer_.emplace(database::open(uri_, {.pool_size = 1}));
    (void)db_->exec("CREATE TABLE t (k text PRIMARY KEY)", {});
  }
  long count_rows() { return std::stol(*observer_->exec("SELECT count(*) FROM t", {}).at(0).at(0)); }

  std::string uri_;
  std::optional<database> db_, observer_;
};

TEST_F(lazy_begin, the_block_opens_with_the_first_statement_and_not_before) {
  pg::tx tx(*db_);
  EXPECT_EQ(in_state(*observer_, "idle in transaction"), 0) << "BEGIN went out on its own";
  (void)tx.exec("INSERT INTO t VALUES ('a')", {});
  EXPECT_EQ(in_state(*observer_, "idle in transaction"), 1);
  EXPECT_EQ(count_rows(), 0) << "the insert ran inside the block, not committed on its own";
  tx.commit();
  EXPECT_EQ(in_state(*observer_, "idle in transaction"), 0);
  EXPECT_EQ(count_rows(), 1);
}

TEST_F(lazy_begin, a_rollback_after_the_first_statement_undoes_it) {
  {
    pg::tx tx(*db_);
    (void)tx.exec("INSERT INTO t VALUES ('a')", {});
    tx.rollback();
  }
  EXPECT_EQ(count_rows(), 0);
  {
    pg::tx tx(*db_);
    (void)tx.exec("INSERT INTO t VALUES ('b')", {});
  }  // destroyed without commit
  EXPECT_EQ(count_rows(), 0);
}

TEST_F(lazy_begin, a_failed_first_statement_aborts_the_block_and_commit_says_so) {
  (void)db_->exec("INSERT INTO t VALUES ('taken')", {});
  pg::tx tx(*db_);
  EXPECT_THROW((void)tx.exec("INSERT INTO t VALUES ('taken')", {}), spool::error);
  EXPECT_EQ(in_state(*observer_, "idle in transaction (aborted)"), 1);
  try {
    tx.commit();
    FAIL() << "commit of an aborted block succeeded";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_state);
    EXPECT_EQ(e.reason(), "transaction_aborted");
  }
  // The connection went back to the pool usable: the next transaction works.
  pg::tx next(*db_);
  (void)next.exec("INSERT INTO t VALUES ('next')", {});
  next.commit();
  EXPECT_EQ(count_rows(), 2);
}

TEST_F(lazy_begin, a_transaction_that_ran_nothing_commits_and_rolls_back_without_a_round_trip) {
  {
    pg::tx tx(*db_);
    tx.commit();
    EXPECT_THROW(tx.commit(), spool::error) << "an ended transaction stays ended";
  }
  {
    pg::tx tx(*db_);
    tx.rollback();
  }
  // Both connections are reusable, outside any block.
  for (int i = 0; i < 3; ++i) {
    pg::tx tx(*db_);
    (void)tx.exec("INSERT INTO t VALUES ($1)", {std::to_string(i)});
    tx.commit();
  }
  EXPECT_EQ(count_rows(), 3);
  EXPECT_EQ(in_state(*observer_, "idle in transaction"), 0);
}

TEST_F(lazy_begin, a_first_statement_that_does_not_parse_aborts_the_block_as_an_eager_begin_would) {
  pg::tx tx(*db_);
  EXPECT_THROW((void)tx.exec("INSERT INTO no_such_table VALUES ('a')", {}), spool::error);
  // Had the parse run before BEGIN, the block would not exist, and this
  // insert would run, and commit, on its own.
  EXPECT_THROW((void)tx.exec("INSERT INTO t VALUES ('after')", {}), spool::error);
  try {
    tx.commit();
    FAIL() << "commit after a failed statement succeeded";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.reason(), "transaction_aborted");
  }
  EXPECT_EQ(count_rows(), 0);
}

TEST_F(lazy_begin, a_first_statement_refused_before_sending_leaves_the_block_to_open_with_the_next) {
  (void)db_->exec("INSERT INTO t VALUES ($1)", {std::string("warm")});  // prepared on a connection
  (void)db_->exec("DELETE FROM t", {});
  for (int i = 0; i < 2; ++i) {  // each pooled connection, prepared or not
    pg::tx tx(*db_);
    EXPECT_THROW((void)tx.exec("INSERT INTO t VALUES ($1)", {std::string("nul\0byte", 8)}), spool::error);
    (void)tx.exec("INSERT INTO t VALUES ($1)", {std::string("inside")});
    EXPECT_EQ(count_rows(), 0) << "the insert ran outside a block";
    tx.rollback();
  }
  EXPECT_EQ(count_rows(), 0);
}

TEST_F(lazy_begin, a_server_gone_before_the_first_statement_is_unavailable_not_in_doubt) {
  auto one = database::open(uri_, {.pool_size = 1});
  {
    pg::tx tx(one);  // prepares the insert on the pool's one connection
    (void)tx.exec("INSERT INTO t VALUES ($1)", {std::string("first")});
    tx.commit();
  }
  const auto pid = *one.exec("SELECT pg_backend_pid()", {}).at(0).at(0);
  (void)observer_->exec("SELECT pg_terminate_backend($1::int)", {pid});
  ASSERT_TRUE(eventually(
      [&] {
        return *observer_->exec("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int", {pid})
                    .at(0)
                    .at(0) == "0";
      },
      std::chrono::seconds(10)));
  pg::tx tx(one);
  try {
    (void)tx.exec("INSERT INTO t VALUES ($1)", {std::string("second")});
    FAIL() << "a statement on a terminated backend succeeded";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), errc::unavailable) << e.what();  // BEGIN went first: nothing can have committed
    EXPECT_TRUE(e.retryable());
  }
  EXPECT_EQ(count_rows(), 1);
}

TEST_F(lazy_begin, the_outbox_writer_accepts_a_transaction_whose_begin_has_not_gone_out_yet) {
  (void)migrate(*db_);
  outbox::writer w(*db_);
  outbox::envelope_builder b;
  {
    pg::tx tx(*db_);
    (void)w.insert(tx, b.build({.topic = "orders", .payload = R"({"n":1})"}));
    tx.commit();
  }
  {
    pg::tx tx(*db_);
    (void)w.insert(tx, b.build({.topic = "orders", .payload = R"({"n":2})"}));
    tx.rollback();
  }
  EXPECT_EQ(*observer_->exec("SELECT count(*) FROM outbox_messages", {}).at(0).at(0), "1");
}

}  // namespace
}  // namespace spool::test
