// The mq and ops claims on a database whose default isolation is READ
// COMMITTED, REPEATABLE READ or SERIALIZABLE (issue 17): each claims every
// message or op exactly once under concurrency and raises nothing, because
// Spool's connections set the level its claims rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;

class isolation_default : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    uri_ = make_pg_database("isolation_" + std::to_string(std::hash<std::string>{}(GetParam()) % 1000));
    const auto name = uri_.substr(uri_.rfind('/') + 1);
    pg_exec(uri_, "ALTER DATABASE \"" + name + "\" SET default_transaction_isolation = '" + GetParam() + "'");
    ASSERT_EQ(*pg_query(uri_, "SHOW default_transaction_isolation").at(0).at(0), GetParam());
    db_.emplace(database::open(uri_, {.pool_size = 12}));
    (void)migrate(*db_);
  }
  std::string uri_;
  std::optional<database> db_;
};

TEST_P(isolation_default, eight_mq_consumers_claim_every_message_once_and_raise_nothing) {
  constexpr int messages = 3000, consumers = 8;
  mq::queue q(*db_, {.name = "iso", .visibility_timeout = 60s});
  for (int first = 0; first < messages; first += 500) {
    std::vector<mq::message> batch(500);
    for (int i = 0; i < 500; ++i) {
      batch[i].id = "m" + std::to_string(first + i);
      batch[i].mediation_type = "HTTP";
    }
    (void)q.publish_batch(batch);
  }
  std::mutex mu;
  std::multiset<std::string> claimed;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      try {
        for (;;) {
          const auto got = q.poll(10);
          if (got.empty()) break;
          std::vector<std::string> receipts;
          for (const auto& d : got) receipts.push_back(d.receipt);
          (void)q.ack_batch(receipts);
          std::lock_guard lock(mu);
          for (const auto& d : got) claimed.insert(d.broker_message_id);
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        errors.emplace_back(e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(errors.empty()) << errors.size() << " consumers failed, first: " << errors.front();
  EXPECT_EQ(claimed.size(), static_cast<std::size_t>(messages));
  EXPECT_EQ(std::set<std::string>(claimed.begin(), claimed.end()).size(), claimed.size()) << "a double claim";
}

TEST_P(isolation_default, eight_ops_workers_claim_every_op_once_and_raise_nothing) {
  constexpr int count = 3000, workers = 8;
  ops::queue q(*db_);
  std::vector<ops::new_op> batch;
  for (int i = 0; i < count; ++i) batch.push_back({.id = "o" + std::to_string(i), .type = "iso"});
  for (std::size_t first = 0; first < batch.size(); first += 500) {
    (void)q.enqueue_batch(std::vector<ops::new_op>(batch.begin() + first, batch.begin() + first + 500));
  }
  std::mutex mu;
  std::multiset<std::string> claimed;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      try {
        for (;;) {
          const auto got = q.dequeue_batch(10, {"iso"}, "iso-worker");
          if (got.empty()) break;
          std::vector<ops::lease> leases;
          for (const auto& o : got) leases.push_back({o.id, o.lease_token.value_or("")});
          EXPECT_TRUE(q.ack_batch(leases).empty());
          std::lock_guard lock(mu);
          for (const auto& o : got) claimed.insert(o.id);
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        errors.emplace_back(e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(errors.empty()) << errors.size() << " workers failed, first: " << errors.front();
  EXPECT_EQ(claimed.size(), static_cast<std::size_t>(count));
  EXPECT_EQ(std::set<std::string>(claimed.begin(), claimed.end()).size(), claimed.size()) << "a double claim";
}

INSTANTIATE_TEST_SUITE_P(defaults, isolation_default,
                         ::testing::Values("read committed", "repeatable read", "serializable"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), ' ', '_');
                           return n;
                         });

}  // namespace
}  // namespace spool::test
