// The op-queue conformance fixture: every engine-neutral scenario of
// op-queue.md §9 runs against a real PostgreSQL database (fresh per test, in
// the server the `pg` CTest fixture starts) and a real SQLite file.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/ops/queue.hpp"
#include "support/test_db.hpp"

namespace spool::test {

// Asserts that stmt throws spool::error with exactly the given code.
#define EXPECT_ERRC(stmt, expected_code)                                                            \
  do {                                                                                              \
    try {                                                                                           \
      stmt;                                                                                         \
      ADD_FAILURE() << "expected spool::error " << spool::to_string(expected_code) << ", got none"; \
    } catch (const spool::error& e) {                                                               \
      EXPECT_EQ(e.code(), expected_code) << e.what();                                               \
    }                                                                                               \
  } while (0)

using namespace std::chrono_literals;

inline ops::time_point utc_now() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

inline ops::new_op new_op(std::string type, nlohmann::json payload = nlohmann::json::object()) {
  ops::new_op o;
  o.type = std::move(type);
  o.payload = std::move(payload);
  return o;
}

// Sets TZ for the lifetime of the object and asserts that the offset took
// effect (a zone the C library does not know would silently mean UTC).
class scoped_tz {
 public:
  scoped_tz(const char* tz, long expected_offset_s) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    ::setenv("TZ", tz, 1);
    ::tzset();
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    ::localtime_r(&now, &local);
    took_effect_ = local.tm_gmtoff == expected_offset_s;
    EXPECT_EQ(local.tm_gmtoff, expected_offset_s) << "TZ=" << tz << " did not take effect";
  }
  ~scoped_tz() {
    if (old_) {
      ::setenv("TZ", old_->c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
  }
  scoped_tz(const scoped_tz&) = delete;
  scoped_tz& operator=(const scoped_tz&) = delete;
  [[nodiscard]] bool took_effect() const { return took_effect_; }

 private:
  std::optional<std::string> old_;
  bool took_effect_ = false;
};

class ops_conformance : public ::testing::TestWithParam<engine> {
 protected:
  void SetUp() override {
    if (GetParam() == engine::postgres) {
      uri_ = make_pg_database(std::string("ops_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    } else {
      dir_ = std::make_unique<temp_dir>();
      uri_ = dir_->sqlite_uri();
    }
    db_.emplace(database::open(uri_));
    if (migrate_) ops::migrate(*db_);
  }

  [[nodiscard]] bool is_pg() const { return GetParam() == engine::postgres; }

  std::unique_ptr<ops::queue> make_queue(ops::queue_options o = {}) {
    return std::make_unique<ops::queue>(*db_, std::move(o));
  }

  // The queue of most tests, built on first use.
  ops::queue& q() {
    if (!q_) q_ = make_queue();
    return *q_;
  }

  std::string enqueue(const std::string& type, nlohmann::json payload = nlohmann::json::object(),
                      std::int32_t priority = 0) {
    auto o = new_op(type, std::move(payload));
    o.priority = priority;
    return q().enqueue(o).id;
  }

  // Claims one op and expects there was one.
  ops::op claim(const std::vector<std::string>& types = {}) {
    auto got = q().dequeue(types);
    EXPECT_TRUE(got.has_value()) << "nothing to dequeue";
    return got ? *got : ops::op{};
  }

  std::vector<row> sql(const std::string& statement, const std::vector<param>& params = {}) {
    return db_->exec(statement, params);
  }

  std::int64_t count(const std::string& where = "1=1") {
    return std::stoll(*sql("SELECT count(*) FROM ops_queue WHERE " + where).at(0).at(0));
  }

  // Moves an op's heartbeat (and start) an hour into the past, as if its
  // worker had stopped heartbeating long ago.
  void age_heartbeat(const std::string& id) {
    sql(is_pg() ? "UPDATE ops_queue SET heartbeat_at = now() - interval '1 hour' WHERE id = $1"
                : "UPDATE ops_queue SET heartbeat_at = datetime('now', '-1 hour') WHERE id = $1",
        {id});
  }

  // Polls f() every 100 ms until it is true or the timeout passes.
  template <class F>
  static bool eventually(F&& f, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (f()) return true;
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(100ms);
    }
  }

  bool migrate_ = true;
  std::string uri_;
  std::unique_ptr<temp_dir> dir_;
  std::optional<database> db_;
  std::unique_ptr<ops::queue> q_;
};

inline std::string engine_name(const ::testing::TestParamInfo<engine>& info) {
  return info.param == engine::postgres ? "postgres" : "sqlite";
}

#define SPOOL_OPS_BOTH_ENGINES(suite) \
  INSTANTIATE_TEST_SUITE_P(engines, suite, ::testing::Values(engine::postgres, engine::sqlite), engine_name)

}  // namespace spool::test
