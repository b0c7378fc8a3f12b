// The hostile-input fixture (issue 7): every scenario runs against a fresh
// PostgreSQL database and a fresh SQLite file with every component migrated,
// and can take a fingerprint of the whole database (every table with its row
// count) to prove that a refused or literal input changed nothing else.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"
#include "support/expect_error.hpp"
#include "support/test_db.hpp"

namespace spool::test {

// Runs fn with a transaction of db's engine; commits when it returns.
template <class Fn>
void in_tx(database& db, Fn&& fn) {
  if (db.kind() == engine::postgres) {
    pg::tx tx(db);
    fn(tx);
    tx.commit();
  } else {
    sqlite::tx tx(db);
    fn(tx);
    tx.commit();
  }
}

// Strings an attacker would try on anything that reaches SQL: quote breakers,
// comment starters, placeholder spellings of both engines, escapes, a NUL
// byte, format directives, look-alike quotes, a very long string and
// qualified catalog names. All are valid UTF-8 (invalid UTF-8 has its own
// tests); the NUL byte and the control characters are the only ones a
// "no control characters" field must refuse.
inline std::vector<std::string> hostile_strings() {
  return {
      "'; DROP TABLE queue_messages; --",
      "\" OR 1=1 --",
      "x'); DELETE FROM ops_queue; --",
      "'); DELETE FROM outbox_messages; --",
      "' OR '1'='1",
      "$1",
      "?1",
      "?",
      ":name @p $$ $tag$",
      "$$; DROP TABLE spool_schema_migrations; $$",
      "\\",
      "\\'; DROP TABLE queue_messages; --",
      "E'\\x27' \\0 \\n",
      std::string("nul\0byte'; DROP TABLE ops_queue; --", 35),
      "%s%n%x%%",
      "{} {0} {:>999999}",
      "\xe2\x80\x98quoted\xe2\x80\x99 \xe2\x80\x9c\xe2\x80\x9d \xef\xbc\x87 \xca\xbc",  // ‘’ “” ＇ ʼ
      "*/ SELECT pg_sleep(10); /*",
      "' || (SELECT version()) || '",
      "pg_catalog.pg_class",
      "public\".\"queue_messages",
      "main.sqlite_master",
      "a\tb\r\nc",
      std::string(3000, '\''),
      std::string(200, 'x') + "'; DROP TABLE queue_messages; --",
  };
}

// True when s holds an ASCII or C1 control character (the rule of ops types
// and ids, op-queue.md §3.1) — s is valid UTF-8 here.
inline bool has_control(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      return true;
    }
  }
  return false;
}

// A printable label for a hostile string in assertion messages.
inline std::string shown(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 60)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 60) out += "…(" + std::to_string(s.size()) + " bytes)";
  return out;
}

// Every table of the database (schema-qualified on PostgreSQL) with its row
// count, plus the list of schemas: what a hostile input must not change.
using fingerprint = std::map<std::string, std::int64_t>;

class hostile : public ::testing::TestWithParam<engine> {
 protected:
  void SetUp() override {
    if (is_pg()) {
      uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    } else {
      dir_ = std::make_unique<temp_dir>();
      uri_ = dir_->sqlite_uri();
    }
    db_.emplace(database::open(uri_));
    spool::migrate(*db_);
  }

  [[nodiscard]] bool is_pg() const { return GetParam() == engine::postgres; }
  // The n-th placeholder in the engine's spelling.
  [[nodiscard]] std::string p(int n) const { return (is_pg() ? "$" : "?") + std::to_string(n); }

  fingerprint take_fingerprint() {
    fingerprint f;
    if (is_pg()) {
      for (const auto& r : db_->exec("SELECT nspname FROM pg_namespace")) f["schema " + *r[0]] = 0;
      const auto tables = db_->exec(
          "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = "
          "c.relnamespace WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', "
          "'information_schema') AND n.nspname NOT LIKE 'pg_toast%'");
      for (const auto& r : tables) f["table " + *r[0]] = count_rows(*r[0]);
      for (const auto& r : db_->exec("SELECT rolname FROM pg_roles")) f["role " + *r[0]] = 0;
    } else {
      for (const auto& r : db_->exec("SELECT type, name FROM sqlite_master")) {
        // sqlite_sequence is AUTOINCREMENT bookkeeping: it gains a row with a table's first insert.
        const bool counted = *r[0] == "table" && *r[1] != "sqlite_sequence";
        f[*r[0] + " " + *r[1]] = counted ? count_rows("\"" + *r[1] + "\"") : 0;
      }
    }
    return f;
  }

  std::int64_t count_rows(const std::string& qualified) {
    return std::stoll(*db_->exec("SELECT count(*) FROM " + qualified).at(0).at(0));
  }

  // The name under which a Spool table appears in a fingerprint.
  [[nodiscard]] std::string table_key(const std::string& table) const {
    return is_pg() ? "table public." + table : "table " + table;
  }

  // after equals before except for the given row-count deltas.
  void expect_only(const fingerprint& before, const fingerprint& after,
                   const std::map<std::string, std::int64_t>& deltas, const std::string& what) {
    fingerprint expected = before;
    for (const auto& [table, d] : deltas) expected[table_key(table)] += d;
    if (after == expected) return;
    std::string diff;
    for (const auto& [k, v] : expected) {
      const auto it = after.find(k);
      if (it == after.end()) {
        diff += "\n  missing now: " + k;
      } else if (it->second != v) {
        diff += "\n  " + k + ": expected " + std::to_string(v) + " rows, has " + std::to_string(it->second);
      }
    }
    for (const auto& [k, v] : after) {
      if (expected.count(k) == 0) diff += "\n  new: " + k;
    }
    ADD_FAILURE() << what << diff;
  }

  // PostgreSQL text cannot hold U+0000: a bound value with a NUL byte is
  // refused before it is sent (invalid_argument, nul_in_text) rather than cut
  // short by libpq. SQLite stores it.
  [[nodiscard]] bool refused_by_engine(const std::string& s) const {
    return is_pg() && s.find('\0') != std::string::npos;
  }
  void expect_nul_refusal(const spool::error& e, const std::string& s) const {
    EXPECT_TRUE(refused_by_engine(s)) << "refused unexpectedly: " << e.what();
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_EQ(e.reason(), "nul_in_text") << e.what();
  }

  std::string uri_;
  std::unique_ptr<temp_dir> dir_;
  std::optional<database> db_;
};

inline std::string hostile_engine_name(const ::testing::TestParamInfo<engine>& info) {
  return info.param == engine::postgres ? "postgres" : "sqlite";
}

#define SPOOL_HOSTILE_BOTH_ENGINES(suite)                                                       \
  INSTANTIATE_TEST_SUITE_P(engines, suite, ::testing::Values(engine::postgres, engine::sqlite), \
                           hostile_engine_name)

}  // namespace spool::test
