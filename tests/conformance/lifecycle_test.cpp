// Configuration, URIs, stop, health and the schema-ownership rule (§2.3, §4,
// §5.6, §5.7; scenarios 15, 16, 24, 43, 45).
#include <future>

#include <nlohmann/json.hpp>

#include "conformance/mq_fixture.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_lifecycle = mq_conformance;

TEST_P(mq_lifecycle, after_stop_every_operation_raises_stopped_and_healthy_is_false) {
  auto q = make_queue();
  q->publish(msg("m"));
  EXPECT_TRUE(q->healthy());
  q->stop();
  EXPECT_SPOOL_ERROR((void)q->poll(1), errc::stopped);
  EXPECT_SPOOL_ERROR(q->publish(msg("n")), errc::stopped);
  EXPECT_SPOOL_ERROR((void)q->metrics(), errc::stopped);
  EXPECT_FALSE(q->healthy());
  q->stop();  // idempotent
}

TEST_P(mq_lifecycle, a_blocked_poll_wait_raises_stopped_when_the_queue_stops) {
  auto q = make_queue({.poll_interval = 60s});
  auto waiting = std::async(std::launch::async, [&] { return q->poll_wait(1, 120s); });
  std::this_thread::sleep_for(300ms);
  q->stop();
  EXPECT_SPOOL_ERROR(waiting.get(), errc::stopped);
}

TEST_P(mq_lifecycle, polls_racing_stop_raise_stopped_or_succeed_never_a_driver_error) {
  auto q = make_queue();
  std::vector<std::future<void>> pollers;
  std::atomic<int> stopped_seen{0};
  for (int i = 0; i < 4; ++i) {
    pollers.push_back(std::async(std::launch::async, [&] {
      for (;;) {
        try {
          (void)q->poll(1);
        } catch (const error& e) {
          EXPECT_EQ(e.code(), errc::stopped) << e.what();
          ++stopped_seen;
          return;
        }
      }
    }));
  }
  std::this_thread::sleep_for(200ms);
  q->stop();
  for (auto& p : pollers) p.get();
  EXPECT_EQ(stopped_seen.load(), 4);
}

TEST_P(mq_lifecycle, poll_wait_returns_a_message_published_in_this_process_and_empty_at_its_timeout) {
  auto q = make_queue({.poll_interval = 30s});
  auto waiting = std::async(std::launch::async, [&] { return q->poll_wait(1, 20s); });
  std::this_thread::sleep_for(200ms);
  q->publish(msg("wake"));
  const auto got = waiting.get();  // woken by the in-process signal, not the 30 s interval
  EXPECT_EQ(ids(got), std::vector<std::string>{"wake"});
  EXPECT_TRUE(q->poll_wait(1, 300ms).empty());
}

TEST_P(mq_lifecycle, healthy_is_false_without_hanging_when_the_database_is_unreachable) {
  auto db = is_pg() ? database::open("postgresql://nobody@127.0.0.1:1/none")
                    : database::open("sqlite:/nonexistent-dir/sub/x.db");
  mq::queue q(db, {.name = "q"});
  EXPECT_FALSE(q.healthy());
}

class mq_unmigrated : public mq_conformance {
 protected:
  mq_unmigrated() { migrate_ = false; }
};

TEST_P(mq_unmigrated, a_consumer_on_an_empty_database_raises_invalid_state_and_creates_no_table) {
  auto q = make_queue();
  try {
    (void)q->poll(1);
    ADD_FAILURE() << "expected invalid_state";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_state);
    EXPECT_EQ(e.reason(), "schema_version_mismatch");
    EXPECT_NE(std::string(e.what()).find("queue_messages"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("spool migrate"), std::string::npos);
  }
  EXPECT_SPOOL_ERROR(q->publish(msg("m")), errc::invalid_state);
  const auto tables = is_pg() ? rows("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
                              : rows("SELECT count(*) FROM sqlite_master WHERE type = 'table'");
  EXPECT_EQ(*tables.at(0).at(0), "0");
}

TEST_P(mq_unmigrated, migrate_is_idempotent_and_records_each_version_once) {
  const auto first = spool::mq::migrate(*db_);
  EXPECT_EQ(first.size(), 2u);
  EXPECT_TRUE(spool::mq::migrate(*db_).empty());
  (void)spool::migrate(*db_);  // every other component too
  EXPECT_TRUE(spool::migrate(*db_).empty());
  EXPECT_EQ(count("spool_schema_migrations", "component = 'mq'"), 2);
}

SPOOL_BOTH_ENGINES(mq_lifecycle);
SPOOL_BOTH_ENGINES(mq_unmigrated);

// Engine-neutral configuration rules need no database.
TEST(mq_config, the_wire_form_is_camel_case_with_aliases_and_both_visibility_defaults) {
  auto c = mq::queue_config::from_json(R"({"queueName":"orders","queueUri":"sqlite:q.db","connections":4,"visibilityTimeout":45})");
  EXPECT_EQ(c.queue_name, "orders");
  EXPECT_EQ(c.connections, 4u);
  EXPECT_EQ(c.effective_visibility(), 45s);
  c = mq::queue_config::from_json(R"({"name":"alias","queueName":"canonical","uri":"sqlite:a.db"})");
  EXPECT_EQ(c.queue_name, "canonical");
  EXPECT_EQ(c.queue_uri, "sqlite:a.db");
  c = mq::queue_config::from_json(R"({"uri":"sqlite:a.db"})");
  EXPECT_EQ(c.effective_name(), "sqlite:a.db");
  EXPECT_EQ(c.connections, 1u);
  EXPECT_EQ(c.effective_visibility(), 120s);
  c = mq::queue_config::from_json(R"({"uri":"sqlite:a.db","visibilityTimeout":null})");
  EXPECT_EQ(c.effective_visibility(), 120s);
  c = mq::queue_config::from_json(R"({"uri":"sqlite:a.db","visibilityTimeout":0})");
  EXPECT_EQ(c.effective_visibility(), 30s);
  EXPECT_EQ(mq::queue_config{}.effective_visibility(), 30s);
  const auto j = nlohmann::json::parse(mq::queue_config{.queue_name = "n", .queue_uri = "u"}.to_json());
  EXPECT_EQ(j.size(), 4u);
  for (const char* key : {"queueName", "queueUri", "connections", "visibilityTimeout"}) EXPECT_TRUE(j.contains(key));
  EXPECT_SPOOL_ERROR((void)mq::queue_config::from_json(R"({"connections":"many"})"), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)mq::queue_config::from_json(R"({"visibilityTimeout":-1})"), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)mq::queue_config::from_json(R"({"visibilityTimeout":4294967296})"), errc::invalid_argument);
}

TEST(mq_config, a_code_built_queue_with_zero_visibility_uses_thirty_seconds) {
  temp_dir dir;
  mq::queue q(database::open(dir.sqlite_uri()), {.name = "q"});
  EXPECT_EQ(q.visibility_timeout(), 30s);
}

TEST(mq_uris, the_three_uri_forms_pick_their_engine_and_everything_else_is_invalid) {
  EXPECT_EQ(database::open("postgres://u@h/db").kind(), engine::postgres);
  EXPECT_EQ(database::open("postgresql://u@h/db").kind(), engine::postgres);
  EXPECT_EQ(database::open("sqlite:q.db").kind(), engine::sqlite);
  for (const char* bad : {"mysql://h/db", "sqlite://x", "sqlite::memory:", "", "q.db", "host=h dbname=d", "sqlite:"}) {
    EXPECT_SPOOL_ERROR((void)database::open(bad), errc::invalid_argument);
  }
  try {
    (void)database::open("redis://h");
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("no engine registered for scheme \"redis\""), std::string::npos);
  }
}

TEST(mq_uris, passwords_reach_neither_errors_nor_queue_identifiers_shown) {
  auto db = database::open("postgresql://app:hunter2@127.0.0.1:1/db?connect_timeout=1");
  EXPECT_EQ(db.display_name().find("hunter2"), std::string::npos);
  mq::queue q(mq::queue_config{.queue_uri = "postgresql://app:hunter2@127.0.0.1:1/db?connect_timeout=1"});
  try {
    (void)q.poll(1);
    ADD_FAILURE() << "expected a connection failure";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable);
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
  q.stop();
  try {
    (void)q.poll(1);
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(redact_password("host=h password=secret dbname=d"), "host=h password=*** dbname=d");
  EXPECT_SPOOL_ERROR((void)database::open("mysql://u:hunter2@h/db"), errc::invalid_argument);
  try {
    (void)database::open("mysql://u:hunter2@h/db");
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
}

}  // namespace spool::test
