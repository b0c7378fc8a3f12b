// Test support: throwaway databases for Spool's tests.
//
// PostgreSQL: CTest starts one server per build tree (tests/support/pg_server.sh, the `pg` fixture)
// and each suite gets its own fresh database from make_pg_database(), so suites running in
// parallel never see each other's rows. SQLite: a temp_dir per test and a file inside it.
//
// The pg_* and sqlite_* helpers talk to the database directly (libpq / sqlite3), not through Spool:
// tests use them to play a "legacy producer" writing rows Spool did not write, and to inspect
// what Spool wrote.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spool::test {

// Rows as text: one inner vector per row, std::nullopt for SQL NULL.
using rows = std::vector<std::vector<std::optional<std::string>>>;

// The URI of the test server's admin database: $SPOOL_TEST_PG_URI, else the contents of
// $SPOOL_TEST_PG_DIR/uri. Throws std::runtime_error, saying how to start the server, when neither
// is there: a PostgreSQL test must fail, never skip, when its server is missing.
[[nodiscard]] std::string pg_admin_uri();

// Creates a fresh, empty database named after the suite (sanitized, plus pid and a counter, so
// parallel processes and repeated calls never collide) and returns its URI. A leftover database
// of the same name is dropped first. Databases are not dropped afterwards: the whole cluster is
// thrown away when CTest's fixture stops the server.
[[nodiscard]] std::string make_pg_database(std::string_view suite);

// admin_uri with its database replaced by dbname. Accepts a postgres:// or postgresql:// URI
// (query parameters are kept) or a "key=value ..." conninfo string.
[[nodiscard]] std::string pg_uri_for(const std::string& admin_uri, const std::string& dbname);

// Runs sql (simple query protocol: several ;-separated statements are fine) on a fresh
// connection. Throws std::runtime_error with the server's message on any error.
void pg_exec(const std::string& uri, const std::string& sql);

// Like pg_exec, returning the rows of the last statement that returned rows.
[[nodiscard]] rows pg_query(const std::string& uri, const std::string& sql);

// An ACCESS EXCLUSIVE lock on `table`, held by a session of its own from
// construction until destruction (its transaction is then rolled back), so
// every statement that touches the table waits meanwhile.
class held_table_lock {
 public:
  held_table_lock(const std::string& uri, const std::string& table);
  ~held_table_lock();
  held_table_lock(const held_table_lock&) = delete;
  held_table_lock& operator=(const held_table_lock&) = delete;

 private:
  struct session;
  std::unique_ptr<session> s_;
};

// The backend pids of Spool's own connections (application_name spool) to
// uri's database.
[[nodiscard]] std::vector<int> pg_spool_backends(const std::string& uri);
// Whether uri's database has no Spool backend left within `wait`: a closed
// connection's backend leaves pg_stat_activity only once it has exited.
[[nodiscard]] bool pg_spool_backends_gone(const std::string& uri, std::chrono::milliseconds wait);

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(temp_dir&& other) noexcept;
  temp_dir& operator=(temp_dir&& other) noexcept;
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  // "sqlite:" + path()/file: the connection string Spool takes for a SQLite database.
  [[nodiscard]] std::string sqlite_uri(std::string_view file = "spool.db") const;

 private:
  std::filesystem::path path_;
};

// SQLite counterparts of pg_exec/pg_query. path is a database file, or a "sqlite:" URI as
// temp_dir::sqlite_uri() returns. Several statements are fine; a 5 s busy timeout rides out
// Spool's own writers.
void sqlite_exec(const std::string& path, const std::string& sql);
[[nodiscard]] rows sqlite_query(const std::string& path, const std::string& sql);

// PRAGMA integrity_check of the database (file or "sqlite:" URI): "ok", or
// its findings joined by "; ". An unreadable file is its error message.
[[nodiscard]] std::string sqlite_integrity(const std::string& path);

}  // namespace spool::test
