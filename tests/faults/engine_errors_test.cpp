// Each engine translates its failures in one place into structured facts:
// the reason names the condition the same way on both engines, and the
// constraint's name, the SQLSTATE and SQLite's extended code are fields, so
// no caller above the engines reads an error's text (issue 14).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <string>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

enum class which { postgres, sqlite };

class engine_errors : public ::testing::TestWithParam<which> {
 protected:
  void SetUp() override {
    uri_ = GetParam() == which::postgres ? make_pg_database("engine_errors") : dir_.sqlite_uri();
    db_ = std::make_unique<database>(database::open(uri_));
    db_->exec("CREATE TABLE t (k integer PRIMARY KEY, n integer CONSTRAINT n_is_positive CHECK (n > 0))");
    db_->exec("CREATE UNIQUE INDEX t_n_unique ON t (n)");
    db_->exec("INSERT INTO t (k, n) VALUES (1, 1)");
  }

  // The error a statement fails with; fails the test if it succeeds.
  error failure_of(const std::string& sql) {
    try {
      db_->exec(sql);
    } catch (const error& e) {
      return e;
    }
    ADD_FAILURE() << sql << " succeeded";
    return error(errc::database_error, "no error");
  }

  bool pg() const { return GetParam() == which::postgres; }

  temp_dir dir_;
  std::string uri_;
  std::unique_ptr<database> db_;
};

TEST_P(engine_errors, a_check_violation_is_named_with_its_constraint) {
  const error e = failure_of("INSERT INTO t (k, n) VALUES (2, -1)");
  EXPECT_EQ(e.code(), errc::database_error) << e.what();
  EXPECT_EQ(e.reason(), "check_violation");
  EXPECT_EQ(e.constraint(), "n_is_positive");
  EXPECT_EQ(e.sqlstate(), pg() ? "23514" : "");
  EXPECT_EQ(e.extended_code(), pg() ? 0 : SQLITE_CONSTRAINT_CHECK);
}

TEST_P(engine_errors, a_unique_violation_is_named_on_both_engines) {
  const error e = failure_of("INSERT INTO t (k, n) VALUES (3, 1)");
  EXPECT_EQ(e.code(), errc::database_error) << e.what();
  EXPECT_EQ(e.reason(), "unique_violation");
  // PostgreSQL names the index; SQLite names the indexed columns.
  EXPECT_EQ(e.constraint(), pg() ? "t_n_unique" : "t.n");
  EXPECT_EQ(e.extended_code(), pg() ? 0 : SQLITE_CONSTRAINT_UNIQUE);
}

TEST_P(engine_errors, a_missing_column_is_an_undefined_column_on_both_engines) {
  EXPECT_EQ(failure_of("SELECT missing FROM t").reason(), "undefined_column");
  EXPECT_EQ(failure_of("INSERT INTO t (k, missing) VALUES (4, 1)").reason(), "undefined_column");
}

TEST_P(engine_errors, a_missing_table_asks_for_a_migration) {
  const error e = failure_of("SELECT 1 FROM nowhere");
  EXPECT_EQ(e.code(), errc::invalid_state) << e.what();
  EXPECT_EQ(e.reason(), "schema_version_mismatch");
}

TEST_P(engine_errors, context_added_to_an_error_keeps_every_fact) {
  const error cause = failure_of("INSERT INTO t (k, n) VALUES (2, -1)");
  const error wrapped(cause, std::string("envelope 3: ") + cause.what());
  EXPECT_EQ(wrapped.code(), cause.code());
  EXPECT_EQ(wrapped.reason(), cause.reason());
  EXPECT_EQ(wrapped.constraint(), cause.constraint());
  EXPECT_EQ(wrapped.sqlstate(), cause.sqlstate());
  EXPECT_EQ(wrapped.extended_code(), cause.extended_code());
  EXPECT_EQ(std::string(wrapped.what()).rfind("envelope 3: ", 0), 0U);
}

INSTANTIATE_TEST_SUITE_P(on, engine_errors, ::testing::Values(which::postgres, which::sqlite),
                         [](const auto& info) { return info.param == which::postgres ? "postgres" : "sqlite"; });

}  // namespace
}  // namespace spool::test
