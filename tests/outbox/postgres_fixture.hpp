// The PostgreSQL-only outbox tests' fixture (postgres_test.cpp,
// postgres_locks_test.cpp): a database of the test's own with the outbox
// migrated, and a raw libpq connection for the caller's own transactions. In a
// named namespace, so that both files share one fixture type.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "outbox_fixture.hpp"

namespace spool::test {

// The outbox tests name the outbox API unqualified, as its own files do.
using namespace spool::outbox;

struct pg_conn {
  PGconn* c;
  explicit pg_conn(const std::string& uri) : c(PQconnectdb(uri.c_str())) {
    if (PQstatus(c) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c));
    PQsetNoticeProcessor(
        c, [](void*, const char*) {}, nullptr);
  }
  ~pg_conn() { PQfinish(c); }
  // Runs sql; returns the SQLSTATE of a failure, "" on success.
  std::string run(const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    const auto st = PQresultStatus(r);
    std::string state;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      state = s ? s : "?";
    }
    PQclear(r);
    return state;
  }
  int backend_pid() const { return PQbackendPID(c); }
};

class outbox_postgres : public ::testing::Test {
 protected:
  void SetUp() override {
    uri_ = make_pg_database(::testing::UnitTest::GetInstance()->current_test_info()->name());
    db_.emplace(database::open(uri_));
    outbox::migrate(*db_);
    db_->exec("CREATE TABLE app_orders (id text PRIMARY KEY)");
  }
  static envelope env(std::string id, std::string key = {}) {
    envelope e;
    e.id = std::move(id);
    e.topic = "t";
    e.payload = "p";
    e.ordering_key = std::move(key);
    return e;
  }
  std::int64_t count(const std::string& table = "outbox_messages") {
    return std::stoll(*db_->exec("SELECT count(*) FROM " + table).at(0).at(0));
  }
  static std::vector<std::string> ids(const std::vector<claimed_message>& c) {
    std::vector<std::string> out;
    for (const auto& m : c) out.push_back(m.message.id);
    return out;
  }
  // Waits until every stored row is below the commit-order horizon (the
  // cluster-wide xmin). Other suites share this server, and any transaction
  // of theirs older than our rows holds ordered claims back until it ends.
  void settle() {
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (*db_->exec("SELECT coalesce(max(xact_id) < pg_snapshot_xmin(pg_current_snapshot()), true) "
                      "FROM outbox_messages")
                   .at(0)
                   .at(0) != "t" &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(20ms);
    }
  }
  std::string uri_;
  std::optional<database> db_;
};

}  // namespace spool::test
