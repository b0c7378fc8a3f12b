// The message-queue conformance fixture: every scenario runs against a real
// PostgreSQL database (fresh per test suite instance) and a real SQLite file.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "support/expect_error.hpp"
#include "support/log_capture.hpp"
#include "support/test_db.hpp"

namespace spool::test {

inline std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class mq_conformance : public ::testing::TestWithParam<engine> {
 protected:
  void SetUp() override {
    log_capture::install();
    if (GetParam() == engine::postgres) {
      uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    } else {
      dir_ = std::make_unique<temp_dir>();
      uri_ = dir_->sqlite_uri();
    }
    db_.emplace(database::open(uri_));
    if (migrate_) {
      spool::migrate(*db_);
      // The suite must pass on tables other implementations created, which
      // lack Spool's performance indexes (spec scenario 44): mq/3's down
      // restores mq/2's indexes, whose down removes them.
      if (std::getenv("SPOOL_TEST_WITHOUT_MQ_INDEXES") != nullptr) {
        spool::revert_migration(*db_, "mq/3", true);
        spool::revert_migration(*db_, "mq/2", true);
      }
    }
  }

  [[nodiscard]] bool is_pg() const { return GetParam() == engine::postgres; }

  std::unique_ptr<mq::queue> make_queue(mq::queue_options o = {}) {
    if (o.name.empty()) o.name = "q";
    if (o.poll_interval == std::chrono::milliseconds(1000)) o.poll_interval = std::chrono::milliseconds(200);
    return std::make_unique<mq::queue>(*db_, std::move(o));
  }

  // Writes a row exactly as a legacy producer would, by plain SQL.
  void insert_raw(const std::string& queue, const std::string& id, const std::string& payload,
                  std::optional<std::string> group = std::nullopt, std::int64_t created_at = unix_now(),
                  std::int64_t visible_at = -1) {
    if (visible_at < 0) visible_at = created_at;
    db_->exec(
        "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, visible_at, payload, "
        "created_at, receive_count) VALUES ($1, $2, $3, NULL, $4, $5, $6, 0)",
        {id, queue, group ? param(*group) : param(nullptr), visible_at, payload, created_at});
  }

  std::int64_t count(const std::string& table, const std::string& where = "1=1") {
    return std::stoll(*db_->exec("SELECT count(*) FROM " + table + " WHERE " + where).at(0).at(0));
  }

  std::vector<row> rows(const std::string& sql, const std::vector<param>& params = {}) { return db_->exec(sql, params); }

  static mq::message msg(std::string id, std::optional<std::string> group = std::nullopt) {
    mq::message m;
    m.id = std::move(id);
    m.mediation_type = "HTTP";
    m.mediation_target = "https://example.test/hook";
    m.message_group_id = std::move(group);
    return m;
  }

  static std::string fmt_id(int i) {
    std::string s = std::to_string(i);
    return "m" + std::string(6 - s.size(), '0') + s;
  }

  static std::vector<std::string> ids(const std::vector<mq::delivered_message>& got) {
    std::vector<std::string> out;
    for (const auto& d : got) out.push_back(d.broker_message_id);
    return out;
  }

  bool migrate_ = true;
  std::string uri_;
  std::unique_ptr<temp_dir> dir_;
  std::optional<database> db_;
};

inline std::string engine_name(const ::testing::TestParamInfo<engine>& info) {
  return info.param == engine::postgres ? "postgres" : "sqlite";
}

#define SPOOL_BOTH_ENGINES(suite) \
  INSTANTIATE_TEST_SUITE_P(engines, suite, ::testing::Values(engine::postgres, engine::sqlite), engine_name)

}  // namespace spool::test
