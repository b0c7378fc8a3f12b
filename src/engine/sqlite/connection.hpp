// A thin RAII layer over one sqlite3 connection: WAL, busy timeout, chosen
// synchronous level, a prepared-statement cache, bound parameters only, and
// every failure translated to spool::error in one place.
// Thread safety: one thread at a time (the pool hands it out exclusively).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spool/call_options.hpp"
#include "spool/database.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace spool::sqlite::detail {

// This process's writers to one SQLite database queue here (see connection).
// A flag under a mutex rather than a locked mutex, so the holder may release
// it from another thread (a transaction handed between threads).
class write_gate {
 public:
  // False when the gate stayed taken for the whole timeout.
  bool acquire(std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_);
    if (!cv_.wait_for(lock, timeout, [&] { return !held_; })) return false;
    held_ = true;
    return true;
  }
  void release() noexcept {
    {
      std::lock_guard lock(m_);
      held_ = false;
    }
    cv_.notify_one();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool held_ = false;
};

class connection {
 public:
  // Opens (creating the file if needed) and applies the connection settings.
  // gate, shared by the connections of one database in this process,
  // queues this process's writers in begin_immediate() on a mutex that wakes
  // the next one at once, instead of SQLite's busy handler, which sleeps and
  // retries and can starve a writer past busy_timeout under load.
  // Errors: invalid_state (sqlite_too_old), unavailable (cannot open / busy).
  connection(const std::string& path, std::chrono::milliseconds busy_timeout, sqlite_synchronous sync,
             std::shared_ptr<write_gate> gate = nullptr);
  // Borrows an application's handle; never closed by Spool.
  explicit connection(::sqlite3* borrowed);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  [[nodiscard]] ::sqlite3* native() const noexcept { return db_; }
  [[nodiscard]] bool in_transaction() const noexcept;

  // Runs one statement (cached prepared) with bound parameters; returns rows
  // as text. Errors: unavailable (busy/locked; disk_full or io_error before
  // a commit), in_doubt (disk_full or io_error while an autocommit write
  // commits), invalid_state (missing table), database_error.
  // With limits, a statement still running at the deadline or stop is
  // interrupted: SQLite undoes it, so that is `unavailable` (nothing done).
  std::vector<row> query(std::string_view sql, const std::vector<param>& params,
                         const call_options& limits = {});
  // Rows changed by the last statement.
  [[nodiscard]] long long changes() const noexcept;
  // Runs SQL text that may hold several statements (migrations), uncached.
  // committing: the text ends a transaction, so a full disk or an I/O error
  // is in_doubt rather than unavailable.
  void exec_script(const std::string& sql, bool committing = false);

  // BEGIN IMMEDIATE, after taking the write gate (at most busy_timeout).
  // Errors: unavailable (busy).
  void begin_immediate();
  // Releases the gate once COMMIT succeeded. Errors: in_doubt (disk_full,
  // io_error), unavailable (busy), database_error.
  void commit();
  void rollback() noexcept;

 private:
  ::sqlite3_stmt* prepare(std::string_view sql);
  // The one translation of SQLite's errors (committing: the failed call was
  // a commit, see query()).
  [[noreturn]] void fail(int rc, std::string_view context, bool committing = false) const;

  void release_gate() noexcept;

  ::sqlite3* db_ = nullptr;
  bool owned_ = true;
  std::chrono::milliseconds busy_timeout_{0};
  std::shared_ptr<write_gate> gate_;
  bool gate_held_ = false;
  std::unordered_map<std::string, ::sqlite3_stmt*> cache_;
};

// RAII transaction on a connection: BEGIN IMMEDIATE now, ROLLBACK unless committed.
class immediate_tx {
 public:
  explicit immediate_tx(connection& c) : c_(c) { c_.begin_immediate(); }
  ~immediate_tx() {
    if (!done_) c_.rollback();
  }
  immediate_tx(const immediate_tx&) = delete;
  immediate_tx& operator=(const immediate_tx&) = delete;
  void commit() {
    c_.commit();
    done_ = true;
  }

 private:
  connection& c_;
  bool done_ = false;
};

}  // namespace spool::sqlite::detail
