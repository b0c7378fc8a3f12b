// One transaction type for both engines (issue 14): a spool::tx carries a
// message, an op and an outbox envelope that commit or roll back together
// with the application's own row, and a transaction of the other engine is
// refused before anything is written.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"
#include "spool/tx.hpp"
#include "support/expect_error.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

enum class tx_engine { postgres, sqlite };

mq::message tx_msg(std::string id) {
  mq::message m;
  m.id = std::move(id);
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.test/hook";
  return m;
}

outbox::envelope tx_env(std::string id) {
  outbox::envelope e;
  e.id = std::move(id);
  e.topic = "orders";
  e.payload = "{}";
  return e;
}

database open_migrated(const std::string& uri) {
  auto db = database::open(uri);
  (void)spool::migrate(db);
  db.exec("CREATE TABLE app_rows (id TEXT)");
  return db;
}

class engine_neutral_tx : public ::testing::TestWithParam<tx_engine> {
 protected:
  void SetUp() override {
    uri_ = GetParam() == tx_engine::postgres ? make_pg_database("engine_neutral_tx") : dir_.sqlite_uri();
    db_ = std::make_unique<database>(open_migrated(uri_));
  }
  bool pg() const { return GetParam() == tx_engine::postgres; }
  std::string count(const std::string& table) { return *db_->exec("SELECT count(*) FROM " + table).at(0).at(0); }

  // The application's row, a message, an op and an envelope in one transaction.
  void write_all(spool::tx& tx, const std::string& id) {
    tx.exec(pg() ? "INSERT INTO app_rows VALUES ($1)" : "INSERT INTO app_rows VALUES (?1)", {id});
    mq::queue q(*db_, {.name = "orders"});
    (void)q.publish(tx, tx_msg(id));
    ops::queue ops(*db_);
    (void)ops.enqueue(tx, ops::new_op{.id = id, .type = "ship"});
    outbox::writer w(*db_);
    (void)w.insert(tx, tx_env(id));
  }

  temp_dir dir_;
  std::string uri_;
  std::unique_ptr<database> db_;
};

TEST_P(engine_neutral_tx, one_spool_tx_commits_a_message_an_op_and_an_envelope_with_the_applications_row) {
  spool::tx tx(*db_);
  EXPECT_EQ(tx.kind(), db_->kind());
  write_all(tx, "a1");
  tx.commit();
  EXPECT_EQ(count("app_rows"), "1");
  EXPECT_EQ(count("queue_messages"), "1");
  EXPECT_EQ(count("ops_queue"), "1");
  EXPECT_EQ(count("outbox_messages"), "1");
}

TEST_P(engine_neutral_tx, a_rolled_back_spool_tx_leaves_none_of_them) {
  {
    spool::tx tx(*db_);
    write_all(tx, "r1");
    tx.rollback();
  }
  {
    spool::tx tx(*db_);
    write_all(tx, "r2");
  }  // destroyed without commit: rolled back
  EXPECT_EQ(count("app_rows"), "0");
  EXPECT_EQ(count("queue_messages"), "0");
  EXPECT_EQ(count("ops_queue"), "0");
  EXPECT_EQ(count("outbox_messages"), "0");
}

TEST_P(engine_neutral_tx, the_engine_typed_transactions_are_spool_txs_of_their_engine) {
  if (pg()) {
    pg::tx tx(*db_);
    write_all(tx, "p1");
    tx.commit();
    EXPECT_SPOOL_ERROR(sqlite::tx{*db_}, errc::invalid_argument);
  } else {
    sqlite::tx tx(*db_);
    write_all(tx, "s1");
    tx.commit();
    EXPECT_SPOOL_ERROR(pg::tx{*db_}, errc::invalid_argument);
  }
  EXPECT_EQ(count("queue_messages"), "1");
  EXPECT_EQ(count("outbox_messages"), "1");
}

TEST_P(engine_neutral_tx, an_ended_spool_tx_is_refused_as_transaction_required) {
  spool::tx tx(*db_);
  tx.commit();
  mq::queue q(*db_, {.name = "orders"});
  EXPECT_SPOOL_ERROR((void)q.publish(tx, tx_msg("late")), errc::transaction_required);
  ops::queue ops(*db_);
  EXPECT_SPOOL_ERROR((void)ops.enqueue(tx, ops::new_op{.id = "late", .type = "ship"}), errc::transaction_required);
  outbox::writer w(*db_);
  EXPECT_SPOOL_ERROR((void)w.insert(tx, tx_env("late")), errc::transaction_required);
  EXPECT_SPOOL_ERROR(tx.exec("SELECT 1"), errc::transaction_required);
  EXPECT_SPOOL_ERROR(tx.commit(), errc::transaction_required);
  EXPECT_EQ(count("queue_messages"), "0");
}

INSTANTIATE_TEST_SUITE_P(both_engines, engine_neutral_tx, ::testing::Values(tx_engine::postgres, tx_engine::sqlite),
                         [](const auto& info) { return info.param == tx_engine::postgres ? "postgres" : "sqlite"; });

// A queue, op queue or writer on one engine given the other engine's
// transaction: invalid_argument (wrong_engine), and neither database changes.
TEST(engine_neutral_tx_across_engines, a_transaction_of_the_other_engine_is_refused_and_writes_nothing) {
  temp_dir dir;
  auto pg_db = open_migrated(make_pg_database("engine_neutral_tx_across"));
  auto lite_db = open_migrated(dir.sqlite_uri());
  mq::queue pg_queue(pg_db, {.name = "orders"});
  ops::queue pg_ops(pg_db);
  outbox::writer pg_writer(pg_db);
  mq::queue lite_queue(lite_db, {.name = "orders"});
  ops::queue lite_ops(lite_db);
  outbox::writer lite_writer(lite_db);
  {
    spool::tx lite_tx(lite_db);
    EXPECT_SPOOL_ERROR((void)pg_queue.publish(lite_tx, tx_msg("x")), errc::invalid_argument);
    EXPECT_SPOOL_ERROR((void)pg_ops.enqueue(lite_tx, ops::new_op{.id = "x", .type = "ship"}), errc::invalid_argument);
    EXPECT_SPOOL_ERROR((void)pg_writer.insert(lite_tx, tx_env("x")), errc::invalid_argument);
    try {
      (void)pg_writer.insert(lite_tx, tx_env("x"));
    } catch (const error& e) {
      EXPECT_EQ(e.reason(), "wrong_engine");
    }
    lite_tx.commit();
  }
  {
    spool::tx pg_tx(pg_db);
    EXPECT_SPOOL_ERROR((void)lite_queue.publish(pg_tx, tx_msg("y")), errc::invalid_argument);
    EXPECT_SPOOL_ERROR((void)lite_ops.enqueue(pg_tx, ops::new_op{.id = "y", .type = "ship"}), errc::invalid_argument);
    EXPECT_SPOOL_ERROR((void)lite_writer.insert(pg_tx, tx_env("y")), errc::invalid_argument);
    pg_tx.commit();
  }
  for (auto* db : {&pg_db, &lite_db}) {
    EXPECT_EQ(*db->exec("SELECT count(*) FROM queue_messages").at(0).at(0), "0");
    EXPECT_EQ(*db->exec("SELECT count(*) FROM ops_queue").at(0).at(0), "0");
    EXPECT_EQ(*db->exec("SELECT count(*) FROM outbox_messages").at(0).at(0), "0");
  }
}

}  // namespace
}  // namespace spool::test
