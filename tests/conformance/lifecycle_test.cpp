// Configuration, URIs, stop, health and the schema-ownership rule (§2.3, §4,
// §5.6, §5.7; scenarios 15, 16, 24, 43, 45).
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>

#include "conformance/mq_fixture.hpp"
#include "support/log_capture.hpp"

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

namespace {

// A TCP port on which nothing answers but the kernel completes every connect
// into the listen backlog, so a test can tell afterwards whether anyone tried
// to reach it (a PostgreSQL server that was never contacted, or was).
class silent_listener {
 public:
  silent_listener() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        ::fcntl(fd_, F_SETFL, O_NONBLOCK) != 0) {
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    port_ = ntohs(addr.sin_port);
  }
  ~silent_listener() { ::close(fd_); }
  silent_listener(const silent_listener&) = delete;
  silent_listener& operator=(const silent_listener&) = delete;

  [[nodiscard]] int port() const { return port_; }
  // True when a connection is waiting in the backlog (it is accepted and closed).
  bool was_contacted() {
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return false;
    ::close(c);
    return true;
  }

 private:
  int fd_;
  int port_ = 0;
};

}  // namespace

TEST_P(mq_lifecycle, after_stop_poll_and_publish_raise_stopped_without_touching_the_database) {
  // A database this process has never contacted, where any attempt leaves a
  // trace: a PostgreSQL port nobody answers on, or a SQLite file SQLite would
  // create on open. (A driver error after stop would also surface as
  // `stopped`, so the code alone cannot show that nothing was touched.)
  std::optional<silent_listener> listener;
  temp_dir dir;
  const auto file = dir.path() / "never-opened.db";
  std::string uri = "sqlite:" + file.string();
  if (is_pg()) {
    listener.emplace();
    uri = fmt::format("postgresql://nobody@127.0.0.1:{}/none?connect_timeout=1", listener->port());
  }
  auto touched = [&] { return is_pg() ? listener->was_contacted() : std::filesystem::exists(file); };
  auto db = database::open(uri);
  {
    mq::queue q(db, {.name = "q"});
    q.stop();
    EXPECT_SPOOL_ERROR((void)q.poll(1), errc::stopped);
    EXPECT_SPOOL_ERROR((void)q.poll_wait(1, 1s), errc::stopped);
    EXPECT_SPOOL_ERROR(q.publish(msg("m")), errc::stopped);
    EXPECT_SPOOL_ERROR((void)q.publish_batch({msg("a"), msg("b")}), errc::stopped);
  }
  EXPECT_FALSE(touched());
  // The trace is real: a live queue's poll does reach the database.
  mq::queue live(db, {.name = "q"});
  try {
    (void)live.poll(1);
  } catch (const error&) {  // no server / no tables: the attempt is what counts
  }
  EXPECT_TRUE(touched());
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
  const auto tables =
      is_pg() ? rows("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
              : rows("SELECT count(*) FROM sqlite_master WHERE type = 'table'");
  EXPECT_EQ(*tables.at(0).at(0), "0");
}

TEST_P(mq_unmigrated, migrate_is_idempotent_and_records_each_version_once) {
  const auto first = spool::mq::migrate(*db_);
  EXPECT_EQ(first.size(), 3u);
  EXPECT_TRUE(spool::mq::migrate(*db_).empty());
  (void)spool::migrate(*db_);  // every other component too
  EXPECT_TRUE(spool::migrate(*db_).empty());
  EXPECT_EQ(count("spool_schema_migrations", "component = 'mq'"), 3);
}

SPOOL_BOTH_ENGINES(mq_lifecycle);
SPOOL_BOTH_ENGINES(mq_unmigrated);

// SECURITY.md: a queue named after its URI never stores or shows the URI's password.
TEST(mq_config, a_queue_name_taken_from_the_uri_never_holds_its_password) {
  for (const char* uri : {"postgresql://app:s3cret@db.internal/q", "postgres://app@db/q?password=s3cret&x=1",
                          "postgresql://app:s3cr%65t@db,db2/q"}) {
    SCOPED_TRACE(uri);
    const auto c = mq::queue_config::from_json(nlohmann::json{{"queueUri", uri}}.dump());
    EXPECT_EQ(c.effective_name().find("s3cr"), std::string::npos) << c.effective_name();
    EXPECT_NE(c.effective_name().find("***"), std::string::npos) << c.effective_name();
    EXPECT_NE(c.effective_name().find("db"), std::string::npos) << "the name still tells the queue apart";
  }
  EXPECT_EQ(mq::queue_config::from_json(R"({"queueUri":"postgresql://app:s3cret@db/q","queueName":"orders"})")
                .effective_name(),
            "orders");
}

// Engine-neutral configuration rules need no database.
TEST(mq_config, the_wire_form_is_camel_case_with_aliases_and_both_visibility_defaults) {
  auto c = mq::queue_config::from_json(
      R"({"queueName":"orders","queueUri":"sqlite:q.db","connections":4,"visibilityTimeout":45})");
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
  for (const char* key : {"queueName", "queueUri", "connections", "visibilityTimeout"})
    EXPECT_TRUE(j.contains(key));
  EXPECT_SPOOL_ERROR((void)mq::queue_config::from_json(R"({"connections":"many"})"), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)mq::queue_config::from_json(R"({"visibilityTimeout":-1})"),
                     errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)mq::queue_config::from_json(R"({"visibilityTimeout":4294967296})"),
                     errc::invalid_argument);
  // A number beyond a double is invalid JSON here, not an escaping library exception (fuzz/http_inputs).
  EXPECT_SPOOL_ERROR((void)mq::queue_config::from_json(R"({"connections":52e3002})"), errc::invalid_argument);
  EXPECT_SPOOL_ERROR((void)mq::queue_config::from_json("52e3002"), errc::invalid_argument);
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
  for (const char* bad :
       {"mysql://h/db", "sqlite://x", "sqlite::memory:", "", "q.db", "host=h dbname=d", "sqlite:"}) {
    EXPECT_SPOOL_ERROR((void)database::open(bad), errc::invalid_argument);
  }
  try {
    (void)database::open("redis://h");
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("no engine registered for scheme \"redis\""), std::string::npos);
  }
}

TEST(mq_uris, passwords_reach_neither_errors_nor_logs_nor_queue_identifiers_shown) {
  const log_capture logs;
  const std::string uri = "postgresql://app:hunter2@127.0.0.1:1/db?connect_timeout=1";
  auto db = database::open(uri);
  EXPECT_EQ(db.display_name().find("hunter2"), std::string::npos);
  mq::queue q(mq::queue_config{.queue_uri = uri});
  // The identifier is the queue name, here the URI with its password as ***
  // (it is stored in every row: SECURITY.md), as everywhere it is shown.
  EXPECT_EQ(q.identifier(), redact_password(uri));
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
    ADD_FAILURE() << "expected stopped";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::stopped);
    EXPECT_NE(std::string(e.what()).find("queue \"" + redact_password(uri) + "\" is stopped"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("app:***@"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(logs.lines_containing("hunter2").empty());
  EXPECT_EQ(redact_password("host=h password=secret dbname=d"), "host=h password=*** dbname=d");
  EXPECT_SPOOL_ERROR((void)database::open("mysql://u:hunter2@h/db"), errc::invalid_argument);
  try {
    (void)database::open("mysql://u:hunter2@h/db");
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
}

// PostgreSQL only (trust auth ignores the password, so the URI is live): a
// queue named by default after a URI with a password logs its quarantines
// and stale receipts with the password as ***.
TEST(mq_uris_postgres, a_password_in_a_live_uri_reaches_no_log_line) {
  const std::string plain = make_pg_database("mq_uris_postgres");
  const std::string prefix = "postgresql://postgres@";
  ASSERT_TRUE(plain.starts_with(prefix)) << plain;
  const std::string uri = "postgresql://postgres:hunter2@" + plain.substr(prefix.size());
  auto db = database::open(uri);
  spool::migrate(db);
  db.exec(
      "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
      "created_at, receive_count) VALUES ('bad', $1, NULL, NULL, 0, '{broken', 0, 0)",
      {redact_password(uri)});  // the queue's name: its URI with the password as ***
  const log_capture logs;
  mq::queue q(mq::queue_config{.queue_uri = uri});
  EXPECT_TRUE(q.poll(10).empty());  // quarantined, logged at WARN
  mq::message good;
  good.id = "good";
  good.mediation_type = "HTTP";
  good.mediation_target = "https://example.test/hook";
  (void)q.publish(good);
  const auto got = q.poll(1);
  ASSERT_EQ(got.size(), 1u);
  q.ack(got[0].receipt);
  EXPECT_FALSE(q.nack(got[0].receipt));  // stale: logged at DEBUG
  const auto shown = logs.lines_containing(redact_password(uri));
  EXPECT_EQ(shown.size(), 2u) << "the quarantine and the stale receipt name the queue";
  for (const auto& line : logs.lines()) EXPECT_EQ(line.text.find("hunter2"), std::string::npos) << line.text;
}

}  // namespace spool::test
