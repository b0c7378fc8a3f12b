// The PostgreSQL-only message-queue tests' fixture (mq_postgres_test.cpp,
// mq_postgres_plan_test.cpp): a database of the test's own and a pooled
// handle on it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include "spool/database.hpp"
#include "spool/mq/message.hpp"
#include "support/test_db.hpp"

namespace spool::test {

using namespace std::chrono_literals;

class mq_postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_.emplace(database::open(uri_, {.pool_size = 20}));
  }
  std::int64_t scalar(const std::string& sql) { return std::stoll(*pg_query(uri_, sql).at(0).at(0)); }
  static mq::message msg(std::string id, std::optional<std::string> group = std::nullopt) {
    mq::message m;
    m.id = std::move(id);
    m.mediation_type = "HTTP";
    m.mediation_target = "https://example.test/hook";
    m.message_group_id = std::move(group);
    return m;
  }

  std::string uri_;
  std::optional<database> db_;
};

}  // namespace spool::test
