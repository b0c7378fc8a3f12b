// The listener comes back (issue 17): the backend of the process's shared
// LISTEN connection is terminated under a consumer, a worker pool and a relay
// with notify on, each polling only every ten minutes. The listener must
// reconnect by itself (database::listener() and
// spool_listener_reconnects_total say so), make the runtime look at once (the
// item sent while it was away is handled without waiting for a poll), and
// wake it on the next NOTIFY. Only a wake-up can make either item arrive
// within the test's wait: the assertions are on what arrives, not on timings.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/consumer.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/prometheus.hpp"
#include "spool/tx.hpp"
#include "support/test_db.hpp"

namespace spool::test::faults {
namespace {

using namespace std::chrono_literals;

// Ten minutes: no poll falls inside the test's waits.
constexpr auto no_poll = std::chrono::minutes(10);

bool eventually(const std::function<bool()>& f, std::chrono::seconds limit = 30s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

class listener_comes_back : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_.emplace(database::open(uri_));
    spool::migrate(*db_);
    // Another process's handle: its own connections, so nothing reaches the
    // runtime's handle but NOTIFYs through the listener.
    producer_db_.emplace(database::open(uri_));
  }

  // Terminates the LISTEN backend of db_, runs while_away (which sends one
  // item from the producer's handle) at once, and waits until the listener
  // is back: connected again, with one more reconnect.
  void terminate_the_listener_and(const std::function<void()>& while_away) {
    ASSERT_TRUE(eventually([&] { return db_->listener().connected; })) << "the listener never connected";
    const auto before = db_->listener().reconnects;
    const auto killed =
        pg_query(uri_,
                 "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                 "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                 "AND query LIKE 'LISTEN %'");
    ASSERT_EQ(*killed.at(0).at(0), "1") << "one LISTEN backend serves the process";
    while_away();
    ASSERT_TRUE(eventually([&] {
      const auto l = db_->listener();
      return l.connected && l.reconnects == before + 1;
    })) << "the listener did not come back";
    prometheus::text_writer w;
    prometheus::write(w, db_->listener(), {});
    EXPECT_NE(w.str().find(fmt::format("spool_listener_reconnects_total {}\n", before + 1)),
              std::string::npos)
        << w.str();
    EXPECT_NE(w.str().find("spool_listener_connected 1\n"), std::string::npos) << w.str();
  }

  static mq::message msg(std::string id) {
    mq::message m;
    m.id = std::move(id);
    m.mediation_type = "HTTP";
    m.mediation_target = "https://example.test/hook";
    return m;
  }

  std::string uri_;
  std::optional<database> db_, producer_db_;
};

TEST_F(listener_comes_back, a_consumer_looks_at_once_after_its_listener_is_terminated_and_is_woken_again) {
  mq::queue q(*db_, {.name = "listened", .notify = true, .poll_interval = no_poll});
  std::atomic<int> handled{0};
  mq::consumer c(q, mq::message_handler([&](const mq::delivered_message&) { ++handled; }),
                 {.concurrency = 1, .idle_wait = no_poll});
  c.start();
  mq::queue producer(*producer_db_, {.name = "listened", .notify = true});
  terminate_the_listener_and([&] { (void)producer.publish(msg("while-away")); });
  EXPECT_TRUE(eventually([&] { return handled == 1; }))
      << "the message sent while the listener was away waited";
  (void)producer.publish(msg("after"));
  EXPECT_TRUE(eventually([&] { return handled == 2; })) << "the NOTIFY after the reconnect woke nothing";
  c.stop();
  EXPECT_EQ(c.metrics().acked, 2u);
}

TEST_F(listener_comes_back, a_worker_pool_looks_at_once_after_its_listener_is_terminated_and_is_woken_again) {
  ops::queue q(*db_, {.notify = true});
  ops::worker_pool_options o;
  o.workers = 1;
  o.poll_interval = no_poll;
  o.rescuer = false;
  ops::worker_pool pool(q, o);
  std::atomic<int> handled{0};
  pool.add_handler("listened", [&](const ops::op&, ops::handler_context&) { ++handled; });
  pool.start();
  ops::queue producer(*producer_db_, {.notify = true});
  ops::new_op op;
  op.type = "listened";
  op.payload = nlohmann::json::object();
  terminate_the_listener_and([&] { (void)producer.enqueue(op); });
  EXPECT_TRUE(eventually([&] { return handled == 1; }))
      << "the op enqueued while the listener was away waited";
  (void)producer.enqueue(op);
  EXPECT_TRUE(eventually([&] { return handled == 2; })) << "the NOTIFY after the reconnect woke nothing";
  pool.stop();
}

TEST_F(listener_comes_back, a_relay_looks_at_once_after_its_listener_is_terminated_and_is_woken_again) {
  outbox::store st(*db_);
  std::atomic<int> delivered{0};
  outbox::relay_options o;
  o.notify = true;
  o.poll_interval = no_poll;
  o.max_in_flight = 1;
  outbox::relay r(st, outbox::make_callback_sink([&](const outbox::claimed_message&, std::stop_token) {
                    ++delivered;
                    return outbox::sink_outcome::delivered();
                  }),
                  o);
  r.start();
  outbox::writer w(*producer_db_, {.notify = true});
  const auto write = [&](const std::string& id) {
    outbox::envelope e;
    e.id = id;
    e.topic = "t";
    e.payload = "p";
    spool::tx t(*producer_db_);
    (void)w.insert(t, e);
    t.commit();
  };
  terminate_the_listener_and([&] { write("while-away"); });
  EXPECT_TRUE(eventually([&] { return delivered == 1; }))
      << "the envelope written while the listener was away waited";
  write("after");
  EXPECT_TRUE(eventually([&] { return delivered == 2; })) << "the NOTIFY after the reconnect woke nothing";
  r.stop();
}

}  // namespace
}  // namespace spool::test::faults
