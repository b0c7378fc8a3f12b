// Least privilege (docs/SECURITY.md): the roles and grants of
// sql/postgres/roles.sql, run as shipped, let each role do its job on a real
// PostgreSQL and nothing more: no role but the owner can run DDL, and a role
// cannot do another role's work. Missing privileges are errc::unauthorized.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>

#include "common/embedded_sql.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "support/expect_error.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

class pg_roles : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    // Roles are cluster-wide and suites run in parallel: unique names.
    suffix_ = "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    uri_ = make_pg_database("roles");
    std::string script(spool::detail::embedded_sql("postgres/roles.sql"));
    for (const char* role : {"spool_owner", "spool_producer", "spool_consumer", "spool_relay"}) {
      script = replace_all(script, role, role + suffix_);
    }
    const auto split = script.find("-- ==== part 2");
    ASSERT_NE(split, std::string::npos);
    // The PostgreSQL 13/14 default, which PostgreSQL 15 dropped: every role may
    // create in schema public. The shipped script must take that back.
    pg_exec(uri_, "GRANT CREATE ON SCHEMA public TO PUBLIC");
    // An application's own table, beside Spool's, that no Spool role should read.
    pg_exec(uri_, "CREATE TABLE public.app_orders (id int PRIMARY KEY, card text)");
    pg_exec(uri_, script.substr(0, split));
    owner_.emplace(database::open(as("spool_owner")));
    ASSERT_FALSE(spool::migrate(*owner_).empty());  // mq, ops and outbox, into schema spool
    pg_exec(as("spool_owner"), script.substr(split));
  }

  void TearDown() override {
    owner_.reset();
    const auto name = uri_.substr(uri_.rfind('/') + 1);
    pg_exec(pg_admin_uri(), "DROP DATABASE IF EXISTS \"" + name + "\" WITH (FORCE)");
    for (const char* role : {"spool_owner", "spool_producer", "spool_consumer", "spool_relay"}) {
      pg_exec(pg_admin_uri(), std::string("DROP ROLE IF EXISTS \"") + role + suffix_ + "\"");
    }
  }

  // The test database's URI, connecting as one of the roles (trust auth).
  std::string as(const std::string& role) const {
    return replace_all(uri_, "://postgres@", "://" + role + suffix_ + "@");
  }

  static mq::message msg(std::string id) {
    mq::message m;
    m.id = std::move(id);
    m.mediation_type = "HTTP";
    return m;
  }

  static ops::new_op op(std::string type) {
    ops::new_op o;
    o.type = std::move(type);
    o.payload = nlohmann::json::object();
    return o;
  }

  static outbox::envelope env(std::string id) {
    outbox::envelope e;
    e.id = std::move(id);
    e.topic = "orders";
    e.payload = R"({"n":1})";
    return e;
  }

  std::string suffix_, uri_;
  std::optional<database> owner_;
};

TEST_F(pg_roles, EachRoleCanDoItsJobWithOnlyTheShippedGrants) {
  auto producer = database::open(as("spool_producer"));
  auto consumer = database::open(as("spool_consumer"));
  auto relay = database::open(as("spool_relay"));

  // The producer publishes, enqueues and writes an envelope in its own transaction.
  mq::queue out(producer, {.name = "jobs"});
  EXPECT_EQ(out.publish(msg("m1")).statuses.at(0), mq::publish_status::inserted);
  EXPECT_EQ(out.publish(msg("m1")).statuses.at(0), mq::publish_status::already_present);
  ops::queue enqueuer(producer);
  const auto op_id = enqueuer.enqueue(op("thumb")).id;
  {
    outbox::writer w(producer);
    pg::tx tx(producer);
    (void)w.insert(tx, env("e1"));
    tx.commit();
  }
  // A poison row, as a broken legacy producer might write it.
  pg_exec(uri_,
          "INSERT INTO spool.queue_messages (id, queue_name, payload, created_at, visible_at, receive_count) "
          "VALUES ('poison', 'jobs', 'not json', 0, 0, 0)");

  // The consumer claims and acks messages, quarantines the poison row, and runs the op.
  mq::queue in(consumer, {.name = "jobs"});
  auto got = in.poll(10);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body.id, "m1");
  in.ack(got[0].receipt);
  EXPECT_EQ(std::stoll(*pg_query(uri_, "SELECT count(*) FROM spool.queue_messages").at(0).at(0)), 0);
  EXPECT_EQ(std::stoll(*pg_query(uri_, "SELECT count(*) FROM spool.queue_messages_failed").at(0).at(0)), 1);
  ops::queue runner(consumer);
  auto claimed = runner.dequeue({"thumb"});
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(claimed->id, op_id);
  runner.ack(claimed->id, *claimed->lease_token);
  EXPECT_EQ(runner.get(op_id).status, ops::op_status::done);

  // The relay leases the envelope and marks it delivered.
  outbox::store store(relay);
  auto leased = store.claim("relay-1", 10, 30s);
  ASSERT_EQ(leased.size(), 1u);
  store.mark_delivered(leased[0].ref);
  EXPECT_EQ(*pg_query(uri_, "SELECT state FROM spool.outbox_messages WHERE id = 'e1'").at(0).at(0),
            "delivered");
}

TEST_F(pg_roles, NoRoleButTheOwnerCanRunDdl) {
  for (const char* role : {"spool_producer", "spool_consumer", "spool_relay"}) {
    SCOPED_TRACE(role);
    auto db = database::open(as(role));
    EXPECT_SPOOL_ERROR(db.exec("CREATE TABLE spool.intruder (i int)"), errc::unauthorized);
    EXPECT_SPOOL_ERROR(db.exec("CREATE TABLE public.intruder (i int)"), errc::unauthorized);
    EXPECT_SPOOL_ERROR(db.exec("ALTER TABLE spool.queue_messages ADD COLUMN intruder int"),
                       errc::unauthorized);
    EXPECT_SPOOL_ERROR(db.exec("DROP TABLE spool.ops_queue"), errc::unauthorized);
    EXPECT_SPOOL_ERROR(db.exec("TRUNCATE spool.outbox_messages"), errc::unauthorized);
    EXPECT_SPOOL_ERROR(spool::revert_migration(db, "mq/2", true), errc::unauthorized);
  }
  // The same statement works for the owner, so the refusals above are about privilege.
  EXPECT_NO_THROW(owner_->exec("CREATE TABLE spool.allowed (i int)"));
}

TEST_F(pg_roles, NoSpoolRoleReadsTheOutboxOrApplicationTablesOrCreatesTemporaryTablesBeyondItsJob) {
  for (const char* role : {"spool_producer", "spool_consumer", "spool_relay"}) {
    SCOPED_TRACE(role);
    auto db = database::open(as(role));
    EXPECT_SPOOL_ERROR(db.exec("SELECT * FROM public.app_orders"), errc::unauthorized);
    EXPECT_SPOOL_ERROR(db.exec("CREATE TEMP TABLE scratch (i int)"), errc::unauthorized);
    EXPECT_SPOOL_ERROR(db.exec("CREATE TABLE public.intruder (i int)"), errc::unauthorized);
  }
  // The consumer runs messages and ops; envelopes are not its business.
  auto consumer = database::open(as("spool_consumer"));
  EXPECT_SPOOL_ERROR(consumer.exec("SELECT * FROM spool.outbox_messages"), errc::unauthorized);
  EXPECT_SPOOL_ERROR(consumer.exec("SELECT * FROM spool.outbox_messages_replay_audit"), errc::unauthorized);
}

TEST_F(pg_roles, TheRelayRoleDeliversIntoAQueueWithTheMqSink) {
  auto producer = database::open(as("spool_producer"));
  auto relay = database::open(as("spool_relay"));
  {
    mq::message m;
    m.mediation_type = "HTTP";
    m.mediation_target = "http://example/x";
    outbox::envelope e = env("e-mq");
    e.payload = mq::encode(m);
    e.ordering_key = "customer-7";
    outbox::writer w(producer);
    pg::tx tx(producer);
    (void)w.insert(tx, e);
    tx.commit();
  }
  // What `spool relay --sink mq:jobs` runs, as the relay role.
  outbox::store store(relay);
  auto sink = outbox::make_mq_sink(relay, {.queue = "jobs"});
  auto leased = store.claim("relay-1", 1, 30s);
  ASSERT_EQ(leased.size(), 1u);
  ASSERT_EQ(sink->publish(leased[0], {}).kind, outbox::outcome_class::delivered);
  sink->record_delivered(store, leased[0], {});
  EXPECT_EQ(*pg_query(uri_, "SELECT state FROM spool.outbox_messages WHERE id = 'e-mq'").at(0).at(0),
            "delivered");
  const auto row = pg_query(uri_, "SELECT id, queue_name, message_group_id FROM spool.queue_messages");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0][0], "e-mq");
  EXPECT_EQ(row[0][1], "jobs");
  EXPECT_EQ(row[0][2], "customer-7");
}

TEST_F(pg_roles, ARoleCannotDoAnotherRolesWork) {
  auto producer = database::open(as("spool_producer"));
  auto consumer = database::open(as("spool_consumer"));
  auto relay = database::open(as("spool_relay"));
  mq::queue(producer, {.name = "jobs"}).publish(msg("m1"));
  ops::queue(producer).enqueue(op("thumb"));
  {
    outbox::writer w(producer);
    pg::tx tx(producer);
    (void)w.insert(tx, env("e1"));
    tx.commit();
  }
  // A producer cannot claim messages or ops, nor lease the outbox.
  EXPECT_SPOOL_ERROR((void)mq::queue(producer, {.name = "jobs"}).poll(1), errc::unauthorized);
  EXPECT_SPOOL_ERROR((void)ops::queue(producer).dequeue({"thumb"}), errc::unauthorized);
  EXPECT_SPOOL_ERROR((void)outbox::store(producer).claim("p", 1, 30s), errc::unauthorized);
  // A consumer cannot publish or write envelopes; a relay cannot consume.
  EXPECT_SPOOL_ERROR((void)mq::queue(consumer, {.name = "jobs"}).publish(msg("m2")), errc::unauthorized);
  {
    outbox::writer w(consumer);
    pg::tx tx(consumer);
    EXPECT_SPOOL_ERROR((void)w.insert(tx, env("e2")), errc::unauthorized);
  }
  EXPECT_SPOOL_ERROR((void)mq::queue(relay, {.name = "jobs"}).poll(1), errc::unauthorized);
  // Nothing changed: the one message, op and envelope still wait.
  EXPECT_EQ(*pg_query(uri_, "SELECT count(*) FROM spool.queue_messages").at(0).at(0), "1");
  EXPECT_EQ(*pg_query(uri_, "SELECT status FROM spool.ops_queue").at(0).at(0), "pending");
  EXPECT_EQ(*pg_query(uri_, "SELECT state FROM spool.outbox_messages").at(0).at(0), "pending");
}

}  // namespace
}  // namespace spool::test
