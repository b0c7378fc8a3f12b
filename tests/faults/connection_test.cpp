// A statement whose session dies after its own result but before the
// implicit commit at the end of the call (Spool issue 7, found by
// faults_terminate_postgres): the write did not commit, so the call must not
// report success. In the extended protocol the server sends a statement's
// result at Execute and commits at Sync; a deferred constraint trigger, which
// runs at that commit, terminates its own backend, so the client receives
// the statement's rows and then the FATAL of the failed commit.
#include "engine/postgres/connection.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "spool/call_options.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;
using pg::detail::intent;

constexpr const char* dies_at_commit = R"(
  CREATE TABLE written (id bigint);
  CREATE FUNCTION die_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_terminate_backend(pg_backend_pid());
    PERFORM pg_sleep(5);  -- the termination lands here, inside the commit
    RETURN NULL;
  END $$;
  CREATE CONSTRAINT TRIGGER die_at_commit AFTER INSERT ON written
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION die_at_commit();)";

class faults_connection_postgres : public ::testing::TestWithParam<bool> {};

TEST_P(faults_connection_postgres, a_write_whose_session_dies_before_its_commit_is_in_doubt_and_absent) {
  const bool limited = GetParam();
  const std::string uri = make_pg_database("faults_connection");
  pg_exec(uri, dies_at_commit);
  int in_doubt = 0, other = 0, succeeded = 0;
  for (std::int64_t i = 0; i < 5; ++i) {
    pg::detail::connection c(uri, "test", 5);
    try {
      (void)c.query("INSERT INTO written (id) VALUES ($1) RETURNING id", {i}, intent::write,
                    limited ? call_options::within(10s) : call_options{});
      ++succeeded;
    } catch (const spool::error& e) {
      (e.code() == errc::in_doubt ? in_doubt : other) += 1;
      EXPECT_EQ(e.code(), errc::in_doubt) << e.what();
    }
  }
  // The session never reached its commit: nothing was written, and a call
  // that reported success would have acknowledged a lost write.
  EXPECT_EQ(pg_query(uri, "SELECT count(*) FROM written").at(0).at(0), "0");
  EXPECT_EQ(succeeded, 0) << "calls reported success for writes that never committed";
  EXPECT_EQ(in_doubt, 5);
}

// The same through the public API: an mq publish (one statement with call
// limits; with notify on, a pipeline of the insert and its NOTIFY) whose
// commit dies is in_doubt, and the message is not there.
TEST(faults_commit_dies_postgres, an_mq_publish_whose_commit_dies_is_in_doubt_and_the_message_is_absent) {
  const std::string uri = make_pg_database("faults_commit_dies");
  auto db = database::open(uri);
  spool::migrate(db);
  pg_exec(uri, R"(
    CREATE FUNCTION die_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_terminate_backend(pg_backend_pid());
      PERFORM pg_sleep(5);
      RETURN NULL;
    END $$;
    CREATE CONSTRAINT TRIGGER die_at_commit AFTER INSERT ON queue_messages
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION die_at_commit();)");
  for (const bool notify : {false, true}) {
    SCOPED_TRACE(notify ? "notify on (pipeline)" : "notify off");
    mq::queue_options o;
    o.name = notify ? "notify" : "plain";
    o.notify = notify;
    mq::queue q(db, o);
    mq::message m;
    m.id = o.name + "-1";
    m.mediation_type = "HTTP";
    m.mediation_target = "https://example.test/";
    try {
      (void)q.publish(m, std::chrono::seconds{0}, call_options::within(10s));
      ADD_FAILURE() << "publish reported success for a message whose commit died";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::in_doubt) << e.what();
    }
    EXPECT_EQ(pg_query(uri, "SELECT count(*) FROM queue_messages").at(0).at(0), "0");
  }
}

// A commit the server refuses without losing the session (a deferred
// trigger raising) is an error, never a success, also in the pipeline.
TEST(faults_commit_dies_postgres, an_mq_publish_whose_commit_is_refused_fails_and_the_message_is_absent) {
  const std::string uri = make_pg_database("faults_commit_refused");
  auto db = database::open(uri);
  spool::migrate(db);
  pg_exec(uri, R"(
    CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'refused at commit';
    END $$;
    CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON queue_messages
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit();)");
  for (const bool notify : {false, true}) {
    SCOPED_TRACE(notify ? "notify on (pipeline)" : "notify off");
    mq::queue_options o;
    o.name = notify ? "notify" : "plain";
    o.notify = notify;
    mq::queue q(db, o);
    mq::message m;
    m.id = o.name + "-1";
    m.mediation_type = "HTTP";
    m.mediation_target = "https://example.test/";
    try {
      (void)q.publish(m, std::chrono::seconds{0}, call_options::within(10s));
      ADD_FAILURE() << "publish reported success for a message whose commit was refused";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::database_error) << e.what();
      EXPECT_NE(std::string(e.what()).find("refused at commit"), std::string::npos) << e.what();
    }
    EXPECT_EQ(pg_query(uri, "SELECT count(*) FROM queue_messages").at(0).at(0), "0");
    EXPECT_TRUE(q.healthy()) << "the session survives a refused commit";
  }
}

INSTANTIATE_TEST_SUITE_P(deadline, faults_connection_postgres, ::testing::Bool(), [](const auto& info) {
  return info.param ? "with_call_limits" : "without_call_limits";
});

}  // namespace
}  // namespace spool::test
