// The outbox conformance fixture: every scenario runs against a fresh
// PostgreSQL database and a fresh SQLite file, migrated with spool::outbox::migrate.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/outbox/envelope.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"
#include "support/test_db.hpp"

namespace spool::test {

// Asserts that stmt throws spool::error with the given code and reason.
#define EXPECT_OUTBOX_ERROR(stmt, expected_code, expected_reason)                                     \
  do {                                                                                                \
    try {                                                                                             \
      stmt;                                                                                           \
      ADD_FAILURE() << "expected " << spool::to_string(expected_code) << "/" << (expected_reason)     \
                    << ", got no error";                                                              \
    } catch (const spool::error& e) {                                                                 \
      EXPECT_EQ(e.code(), expected_code) << e.what();                                                 \
      EXPECT_EQ(e.reason(), expected_reason) << e.what();                                             \
    }                                                                                                 \
  } while (0)

using namespace std::chrono_literals;

// Raises max to at least v (a high-water mark kept from several threads).
template <class T>
void raise_to(std::atomic<T>& max, T v) {
  T seen = max;
  while (v > seen && !max.compare_exchange_weak(seen, v)) {
  }
}

class outbox_conformance : public ::testing::TestWithParam<engine> {
 protected:
  void SetUp() override {
    if (is_pg()) {
      uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    } else {
      dir_ = std::make_unique<temp_dir>();
      uri_ = dir_->sqlite_uri();
    }
    db_.emplace(database::open(uri_));
    if (migrate_) outbox::migrate(*db_);
  }

  [[nodiscard]] bool is_pg() const { return GetParam() == engine::postgres; }

  static outbox::envelope env(std::string id, std::string topic = "t", std::string key = {}) {
    outbox::envelope e;
    e.id = std::move(id);
    e.topic = std::move(topic);
    e.payload = "{\"n\":1}";
    e.ordering_key = std::move(key);
    return e;
  }

  // Writes envelopes in one committed transaction of the engine.
  std::vector<outbox::insert_result> write(const std::vector<outbox::envelope>& batch,
                                           outbox::writer_options o = {}) {
    outbox::writer w(*db_, o);
    if (is_pg()) {
      pg::tx tx(*db_);
      auto r = w.insert_batch(tx, batch);
      const std::string xid = *tx.exec("SELECT pg_current_xact_id()::text").at(0).at(0);
      tx.commit();
      // Ordered claims take a row only once every older transaction in the
      // cluster has ended (the horizon rule). Other suites share this server,
      // so wait for that here rather than let a claim come back empty.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (*db_->exec("SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8", {xid}).at(0).at(0) != "t" &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      return r;
    }
    sqlite::tx tx(*db_);
    auto r = w.insert_batch(tx, batch);
    tx.commit();
    return r;
  }

  outbox::store make_store(outbox::store_options o = {}) { return outbox::store(*db_, std::move(o)); }

  std::int64_t count(const std::string& where = "1=1") {
    return std::stoll(*db_->exec("SELECT count(*) FROM outbox_messages WHERE " + where).at(0).at(0));
  }
  std::string state_of(const std::string& id) {
    const auto r = db_->exec(is_pg() ? "SELECT state FROM outbox_messages WHERE id = $1"
                                     : "SELECT state FROM outbox_messages WHERE id = ?1",
                             {id});
    return r.empty() ? "missing" : *r[0][0];
  }
  // Every column of a row as text, for byte-identity checks.
  std::string snapshot(const std::string& id) {
    const auto r = db_->exec(is_pg() ? "SELECT t::text FROM outbox_messages t WHERE id = $1"
                                     : "SELECT seq||'|'||id||'|'||state||'|'||claim_count||'|'||failure_count||'|'||"
                                       "available_at||'|'||updated_at||'|'||coalesce(lease_token,'')||'|'||"
                                       "coalesce(leased_until,'')||'|'||coalesce(last_error,'') FROM outbox_messages "
                                       "WHERE id = ?1",
                             {id});
    return r.empty() ? "" : *r[0][0];
  }
  // Moves a row's lease deadline into the past (tests cannot wait for clocks).
  void expire_lease(const std::string& id) {
    db_->exec(is_pg() ? "UPDATE outbox_messages SET leased_until = clock_timestamp() - interval '1 second' WHERE id = $1"
                      : "UPDATE outbox_messages SET leased_until = leased_until - 3600000000 WHERE id = ?1",
              {id});
  }
  // Another relay takes a live lease over in one statement, as a claim of
  // the expired row would: new owner and token, one more claim, a minute's
  // lease. One statement, so the holder's own claim rounds cannot take the
  // row back in between (expire_lease then a second store's claim could).
  void steal_lease(const std::string& id, const std::string& owner) {
    db_->exec(is_pg()
                  ? "UPDATE outbox_messages SET lease_owner = $2, lease_token = gen_random_uuid(), "
                    "claim_count = claim_count + 1, leased_until = clock_timestamp() + interval '1 minute' "
                    "WHERE id = $1 AND state = 'leased'"
                  : "UPDATE outbox_messages SET lease_owner = ?2, "
                    "lease_token = 'aaaaaaaa-bbbb-4ccc-8ddd-' || substr(hex(randomblob(6)), 1, 12), "
                    "claim_count = claim_count + 1, leased_until = leased_until + 60000000 "
                    "WHERE id = ?1 AND state = 'leased'",
              {id, owner});
  }
  void set_terminal_age(const std::string& id, const std::string& col, int seconds_ago) {
    if (is_pg()) {
      db_->exec("UPDATE outbox_messages SET " + col + " = clock_timestamp() - $2::int * interval '1 second' WHERE id = $1",
                {id, std::int64_t{seconds_ago}});
    } else {
      const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
      db_->exec("UPDATE outbox_messages SET " + col + " = ?2 WHERE id = ?1",
                {id, std::int64_t{now - seconds_ago * 1000000LL}});
    }
  }

  std::string uri_;
  bool migrate_ = true;
  std::unique_ptr<temp_dir> dir_;
  std::optional<database> db_;
};

inline std::string outbox_engine_name(const ::testing::TestParamInfo<engine>& info) {
  return info.param == engine::postgres ? "postgres" : "sqlite";
}

#define SPOOL_OUTBOX_BOTH_ENGINES(suite) \
  INSTANTIATE_TEST_SUITE_P(engines, suite, ::testing::Values(engine::postgres, engine::sqlite), outbox_engine_name)

}  // namespace spool::test
