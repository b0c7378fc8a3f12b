// warm(): the handles open their pooled connections ahead of use, so that a
// runtime starting does not pay a connect on each of its first calls (W4's
// first envelopes waited 30-50 ms for the relay's connects). Best effort: a
// refused connect is not an error, the next call connects as usual.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/store.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

// Spool's backends connected to uri's database (the counting connection
// itself is not Spool's, nor is an earlier count's still exiting).
long backends(const std::string& uri) { return static_cast<long>(pg_spool_backends(uri).size()); }

TEST(warm, each_handle_opens_its_connections_ahead_of_use_up_to_the_pool_size) {
  const auto uri = make_pg_database("warm_pool");
  {
    auto admin = database::open(uri);
    (void)migrate(admin);
  }
  ASSERT_TRUE(pg_spool_backends_gone(uri, std::chrono::seconds(10)))
      << "the migrating handle's backends did not exit";
  auto db = database::open(uri, {.pool_size = 5});
  mq::queue mq_q(db, {.name = "warm"});
  ops::queue ops_q(db);
  outbox::store store(db);
  EXPECT_EQ(mq_q.warm(3), 3u);
  EXPECT_EQ(backends(uri), 3);
  EXPECT_EQ(ops_q.warm(4), 4u);
  EXPECT_EQ(backends(uri), 4);
  EXPECT_EQ(store.warm(50), 5u) << "never more than the pool size";
  EXPECT_EQ(backends(uri), 5);
  EXPECT_EQ(mq_q.warm(2), 5u) << "a pool that holds enough opens nothing";
  EXPECT_EQ(backends(uri), 5);
  // The warmed connections serve calls.
  mq::message m;
  m.id = "m1";
  m.mediation_type = "HTTP";
  (void)mq_q.publish(m);
  EXPECT_EQ(mq_q.poll(1).size(), 1u);
  EXPECT_EQ(backends(uri), 5);
}

TEST(warm, a_connect_refused_by_the_server_ends_the_warm_up_without_an_error) {
  const auto uri = make_pg_database("warm_refused");
  const auto name = uri.substr(uri.rfind('/') + 1);
  // Named after the database, fresh per call: a leftover of the same name lost its
  // grants when make_pg_database dropped the old database, so it can be dropped.
  const std::string role = name;
  {
    auto admin = database::open(uri);
    (void)migrate(admin);
  }
  // Superusers ignore connection limits: the handle connects as a plain role.
  pg_exec(uri, "DROP ROLE IF EXISTS " + role + "; CREATE ROLE " + role + " LOGIN CONNECTION LIMIT 2; " +
                   "GRANT ALL ON ALL TABLES IN SCHEMA public TO " + role + "; " +
                   "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO " + role +
                   "; GRANT ALL ON SCHEMA public TO " + role);
  const auto at = uri.find("://") + 3;
  const auto user_end = uri.find('@', at);
  const auto role_uri = uri.substr(0, at) + role + uri.substr(user_end);
  auto db = database::open(role_uri, {.pool_size = 4});
  mq::queue q(db, {.name = "warm"});
  std::size_t held = 99;
  EXPECT_NO_THROW(held = q.warm(4));
  EXPECT_EQ(held, 2u) << "the third connect is refused (too many connections for role)";
  // Calls work on the connections the pool holds.
  mq::message m;
  m.id = "m1";
  m.mediation_type = "HTTP";
  (void)q.publish(m);
  EXPECT_EQ(q.poll(1).size(), 1u);
}

TEST(warm, a_sqlite_file_that_can_no_longer_be_opened_ends_the_warm_up_without_an_error) {
  temp_dir dir;
  const auto sub = dir.path() / "gone";
  std::filesystem::create_directory(sub);
  auto db = database::open("sqlite:" + (sub / "spool.db").string(), {.pool_size = 4});
  (void)migrate(db);
  ops::queue q(db);
  const auto before = q.warm(1);
  EXPECT_GE(before, 1u);
  std::filesystem::remove_all(sub);
  std::size_t held = 99;
  EXPECT_NO_THROW(held = q.warm(4));
  EXPECT_EQ(held, before) << "no connection opens on a file whose directory is gone";
}

}  // namespace
}  // namespace spool::test
