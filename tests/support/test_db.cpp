#include "support/test_db.hpp"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

namespace spool::test {
namespace {

// The SQL shown in error messages, cut so a failing bulk insert does not flood the log.
std::string sql_excerpt(const std::string& sql) {
  constexpr std::size_t max = 300;
  return sql.size() <= max ? sql : sql.substr(0, max) + "...";
}

std::string trim(std::string s) {
  const auto* ws = " \t\r\n";
  s.erase(s.find_last_not_of(ws) + 1);
  s.erase(0, s.find_first_not_of(ws));
  return s;
}

// ---- PostgreSQL ----

struct pg_conn_deleter {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct pg_result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using pg_conn_ptr = std::unique_ptr<PGconn, pg_conn_deleter>;
using pg_result_ptr = std::unique_ptr<PGresult, pg_result_deleter>;

pg_conn_ptr pg_connect(const std::string& uri) {
  pg_conn_ptr conn(PQconnectdb(uri.c_str()));
  if (!conn) throw std::runtime_error("pg: out of memory connecting to " + uri);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("pg: cannot connect to " + uri + ": " + trim(PQerrorMessage(conn.get())));
  }
  // NOTICEs ("database ... does not exist, skipping") would otherwise go to stderr.
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);
  return conn;
}

// Sends sql with the simple query protocol and drains every result, so a multi-statement string
// is checked statement by statement. Returns the rows of the last result that had rows.
// Throws with the server's message (and SQLSTATE) on the first error.
rows pg_run(PGconn* conn, const std::string& sql, std::string* sqlstate = nullptr) {
  if (PQsendQuery(conn, sql.c_str()) == 0) {
    throw std::runtime_error("pg: cannot send query: " + trim(PQerrorMessage(conn)) +
                             " (SQL: " + sql_excerpt(sql) + ")");
  }
  rows out;
  std::string error;
  while (pg_result_ptr res{PQgetResult(conn)}) {
    switch (PQresultStatus(res.get())) {
      case PGRES_TUPLES_OK: {
        out.clear();
        const int n = PQntuples(res.get());
        const int cols = PQnfields(res.get());
        out.reserve(static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r) {
          auto& row = out.emplace_back();
          row.reserve(static_cast<std::size_t>(cols));
          for (int c = 0; c < cols; ++c) {
            if (PQgetisnull(res.get(), r, c) != 0) {
              row.emplace_back(std::nullopt);
            } else {
              row.emplace_back(std::string(PQgetvalue(res.get(), r, c),
                                           static_cast<std::size_t>(PQgetlength(res.get(), r, c))));
            }
          }
        }
        break;
      }
      case PGRES_COMMAND_OK:
      case PGRES_EMPTY_QUERY:
        break;
      default:
        // Keep draining: libpq needs PQgetResult to return null before the connection is reusable.
        if (error.empty()) {
          error = trim(PQresultErrorMessage(res.get()));
          if (error.empty()) error = PQresStatus(PQresultStatus(res.get()));
          if (sqlstate != nullptr) {
            const char* state = PQresultErrorField(res.get(), PG_DIAG_SQLSTATE);
            *sqlstate = state != nullptr ? state : "";
          }
        }
        break;
    }
  }
  if (!error.empty()) throw std::runtime_error("pg: " + error + " (SQL: " + sql_excerpt(sql) + ")");
  return out;
}

std::string quote_ident(const std::string& name) {
  std::string q = "\"";
  for (char ch : name) {
    if (ch == '"') q += '"';
    q += ch;
  }
  return q + '"';
}

// Suite names become part of a database name: keep [a-z0-9_] and make it short enough that
// name + pid + counter stays under PostgreSQL's 63-byte identifier limit.
std::string sanitize(std::string_view suite) {
  std::string s;
  for (char ch : suite) {
    const auto u = static_cast<unsigned char>(ch);
    s += std::isalnum(u) != 0 ? static_cast<char>(std::tolower(u)) : '_';
    if (s.size() == 32) break;
  }
  return s.empty() ? "suite" : s;
}

std::string percent_encode(const std::string& text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) != 0 || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 0xF];
    }
  }
  return out;
}

// ---- SQLite ----

struct sqlite_db_deleter {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct sqlite_stmt_deleter {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using sqlite_db_ptr = std::unique_ptr<sqlite3, sqlite_db_deleter>;
using sqlite_stmt_ptr = std::unique_ptr<sqlite3_stmt, sqlite_stmt_deleter>;

// Accepts a plain file path or Spool's "sqlite:" connection string.
std::string sqlite_file(const std::string& path) {
  std::string_view p = path;
  if (p.starts_with("sqlite:")) {
    p.remove_prefix(7);
    if (p.starts_with("//")) p.remove_prefix(2);  // sqlite:///abs/path
  }
  return std::string(p);
}

sqlite_db_ptr sqlite_open(const std::string& path) {
  const std::string file = sqlite_file(path);
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  sqlite_db_ptr db(raw);  // sqlite hands back a handle even on failure; it must be closed
  if (rc != SQLITE_OK) {
    throw std::runtime_error("sqlite: cannot open " + file + ": " +
                             (raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  // Spool may hold the write lock from another connection; wait for it rather than fail.
  sqlite3_busy_timeout(db.get(), 5000);
  return db;
}

[[noreturn]] void sqlite_fail(sqlite3* db, const std::string& sql) {
  throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db) + " (SQL: " + sql_excerpt(sql) + ")");
}

}  // namespace

// ---- PostgreSQL ----

std::string pg_admin_uri() {
  if (const char* uri = std::getenv("SPOOL_TEST_PG_URI"); uri != nullptr && *uri != '\0') return uri;
  const char* dir = std::getenv("SPOOL_TEST_PG_DIR");
  if (dir != nullptr && *dir != '\0') {
    const std::string file = std::string(dir) + "/uri";
    std::ifstream in(file);
    std::string uri;
    if (in && std::getline(in, uri) && !trim(uri).empty()) return trim(uri);
    throw std::runtime_error(
        "the PostgreSQL test server is not running: " + file +
        " is missing or empty. Run the test through ctest (its pg fixture starts the server), or start it "
        "yourself: tests/support/pg_server.sh start " +
        dir);
  }
  throw std::runtime_error(
      "the PostgreSQL test server is not running: neither SPOOL_TEST_PG_URI nor SPOOL_TEST_PG_DIR is set. "
      "Run the test through ctest (its pg fixture starts the server), or start one yourself: "
      "tests/support/pg_server.sh start DIR && eval \"$(tests/support/pg_server.sh env DIR)\"");
}

std::string pg_uri_for(const std::string& admin_uri, const std::string& dbname) {
  std::string_view uri = admin_uri;
  std::size_t scheme_end = 0;
  if (uri.starts_with("postgresql://")) {
    scheme_end = 13;
  } else if (uri.starts_with("postgres://")) {
    scheme_end = 11;
  } else {
    // key=value conninfo: libpq lets a later keyword override an earlier one.
    std::string escaped;
    for (char ch : dbname) {
      if (ch == '\\' || ch == '\'') escaped += '\\';
      escaped += ch;
    }
    return admin_uri + " dbname='" + escaped + "'";
  }
  // postgresql://[user@]host[:port][/dbname][?params]: the path runs from the first '/' after
  // the authority to '?' or the end.
  const std::size_t auth_end = std::min(uri.find_first_of("/?", scheme_end), uri.size());
  const std::size_t query = std::min(uri.find('?', auth_end), uri.size());
  return std::string(uri.substr(0, auth_end)) + "/" + percent_encode(dbname) + std::string(uri.substr(query));
}

std::string make_pg_database(std::string_view suite) {
  static std::atomic<unsigned> counter{0};
  const std::string name =
      "t_" + sanitize(suite) + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string admin = pg_admin_uri();
  auto conn = pg_connect(admin);
  // CREATE/DROP DATABASE refuse to run inside a transaction, which a multi-statement string
  // implicitly is: hence two round trips.
  pg_run(conn.get(), "DROP DATABASE IF EXISTS " + quote_ident(name) + " WITH (FORCE)");
  // "source database template1 is being accessed by other users" (55006) is transient when
  // another process happens to be copying it at the same moment: retry a few times.
  for (int attempt = 0;; ++attempt) {
    std::string sqlstate;
    try {
      pg_run(conn.get(), "CREATE DATABASE " + quote_ident(name), &sqlstate);
      break;
    } catch (const std::runtime_error&) {
      if (sqlstate != "55006" || attempt >= 20) throw;
      ::usleep(100'000);
    }
  }
  return pg_uri_for(admin, name);
}

void pg_exec(const std::string& uri, const std::string& sql) {
  auto conn = pg_connect(uri);
  (void)pg_run(conn.get(), sql);
}

rows pg_query(const std::string& uri, const std::string& sql) {
  auto conn = pg_connect(uri);
  return pg_run(conn.get(), sql);
}

struct held_table_lock::session {
  pg_conn_ptr conn;
};

held_table_lock::held_table_lock(const std::string& uri, const std::string& table)
    : s_(std::make_unique<session>(session{pg_connect(uri)})) {
  (void)pg_run(s_->conn.get(), "BEGIN; LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE");
}

held_table_lock::~held_table_lock() {
  PGresult* r = PQexec(s_->conn.get(), "ROLLBACK");
  PQclear(r);
}

std::vector<int> pg_spool_backends(const std::string& uri) {
  std::vector<int> pids;
  for (const auto& r : pg_query(uri,
                                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                "AND application_name = 'spool' AND pid <> pg_backend_pid()")) {
    pids.push_back(std::stoi(r.at(0).value()));
  }
  return pids;
}

bool pg_spool_backends_gone(const std::string& uri, std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!pg_spool_backends(uri).empty()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// ---- temp_dir ----

temp_dir::temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/spool-test-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "temp_dir: mkdtemp " + templ);
  }
  path_ = templ;
}

temp_dir::~temp_dir() {
  if (path_.empty()) return;
  std::error_code ec;  // a destructor must not throw; a leftover temp dir is harmless
  std::filesystem::remove_all(path_, ec);
}

temp_dir::temp_dir(temp_dir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

temp_dir& temp_dir::operator=(temp_dir&& other) noexcept {
  if (this != &other) {
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

std::string temp_dir::sqlite_uri(std::string_view file) const { return "sqlite:" + (path_ / file).string(); }

// ---- SQLite ----

void sqlite_exec(const std::string& path, const std::string& sql) {
  auto db = sqlite_open(path);
  if (sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) sqlite_fail(db.get(), sql);
}

rows sqlite_query(const std::string& path, const std::string& sql) {
  auto db = sqlite_open(path);
  rows out;
  const char* next = sql.c_str();
  while (*next != '\0') {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db.get(), next, -1, &raw, &next) != SQLITE_OK) sqlite_fail(db.get(), sql);
    sqlite_stmt_ptr stmt(raw);
    if (!stmt) continue;  // only whitespace or a comment was left
    const int cols = sqlite3_column_count(stmt.get());
    rows current;
    int rc = 0;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      auto& row = current.emplace_back();
      for (int c = 0; c < cols; ++c) {
        if (sqlite3_column_type(stmt.get(), c) == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
        } else {
          // column_text first, then column_bytes: the documented order for the text's length.
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), c));
          row.emplace_back(std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt.get(), c))));
        }
      }
    }
    if (rc != SQLITE_DONE) sqlite_fail(db.get(), sql);
    if (cols > 0) out = std::move(current);  // like pg_query: the last statement with a result set
  }
  return out;
}

std::string sqlite_integrity(const std::string& path) {
  try {
    std::string out;
    for (const auto& r : sqlite_query(path, "PRAGMA integrity_check")) {
      if (!out.empty()) out += "; ";
      out += r.empty() || !r[0] ? "(null)" : *r[0];
    }
    return out;
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace spool::test
