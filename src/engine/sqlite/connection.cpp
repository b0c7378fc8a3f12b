#include "engine/sqlite/connection.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include "common/call_guard.hpp"
#include "spool/error.hpp"

namespace spool::sqlite::detail {

namespace {

const char* sync_pragma(sqlite_synchronous s) {
  switch (s) {
    case sqlite_synchronous::off:
      return "PRAGMA synchronous=OFF";
    case sqlite_synchronous::normal:
      return "PRAGMA synchronous=NORMAL";
    case sqlite_synchronous::full:
      return "PRAGMA synchronous=FULL";
    case sqlite_synchronous::extra:
      return "PRAGMA synchronous=EXTRA";
  }
  return "PRAGMA synchronous=FULL";
}

}  // namespace

connection::connection(const std::string& path, std::chrono::milliseconds busy_timeout,
                       sqlite_synchronous sync, std::shared_ptr<write_gate> gate)
    : busy_timeout_(busy_timeout), gate_(std::move(gate)) {
  if (sqlite3_libversion_number() < 3038000) {
    throw error(errc::invalid_state,
                fmt::format("SQLite {} is too old: Spool requires 3.38 or newer", sqlite3_libversion()),
                "sqlite_too_old");
  }
  const int rc = sqlite3_open_v2(path.c_str(), &db_,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw error(errc::unavailable, fmt::format("cannot open SQLite database {}: {}", path, msg),
                "connect_failed");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout.count()));
  exec_script("PRAGMA journal_mode=WAL");
  exec_script(sync_pragma(sync));
  exec_script("PRAGMA foreign_keys=ON");
}

connection::connection(::sqlite3* borrowed) : db_(borrowed), owned_(false) {}

connection::~connection() {
  release_gate();
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  if (owned_ && db_ != nullptr) sqlite3_close_v2(db_);
}

bool connection::in_transaction() const noexcept { return sqlite3_get_autocommit(db_) == 0; }

namespace {

// "CHECK constraint failed: spool_malformed_row" → "spool_malformed_row";
// SQLite names a constraint only in its message, so this is read here, once.
std::string constraint_named(const std::string& msg) {
  const auto colon = msg.find(": ");
  return colon == std::string::npos ? std::string() : msg.substr(colon + 2);
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

void connection::fail(int rc, std::string_view context, bool committing) const {
  const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  const int extended = db_ ? sqlite3_extended_errcode(db_) : rc;
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    throw error(errc::unavailable, fmt::format("SQLite database is locked ({}): {}", context, msg), "busy",
                engine_facts{{}, {}, extended});
  }
  if (starts_with(msg, "no such table")) {
    throw error(errc::invalid_state, fmt::format("{} (run `spool migrate`)", msg), "schema_version_mismatch",
                engine_facts{{}, {}, extended});
  }
  if (primary == SQLITE_READONLY)
    throw error(errc::invalid_state, msg, "not_writable", engine_facts{{}, {}, extended});
  // A full disk or an I/O error while committing (COMMIT, or an autocommit
  // write's own step) leaves the outcome unknown to the caller: SQLite rolls
  // an incomplete commit back, but an error from the WAL's sync or a
  // checkpoint may come after the frames were written. Before the commit,
  // nothing was written (issue 17).
  if (primary == SQLITE_FULL || primary == SQLITE_IOERR) {
    const char* reason = primary == SQLITE_FULL ? "disk_full" : "io_error";
    if (committing) {
      throw error(errc::in_doubt, fmt::format("SQLite {} failed while committing; outcome unknown: {}", context, msg),
                  reason, engine_facts{{}, {}, extended});
    }
    throw error(errc::unavailable, fmt::format("SQLite {}: {}", context, msg), reason,
                engine_facts{{}, {}, extended});
  }
  if (primary == SQLITE_CANTOPEN) throw error(errc::unavailable, msg, "io_error", engine_facts{{}, {}, extended});
  // The conditions a capability maps by name, with the reasons the PostgreSQL
  // translator gives them (engine/postgres/errors.cpp).
  engine_facts facts{{}, {}, extended};
  const char* reason = "database_error";
  if (extended == SQLITE_CONSTRAINT_CHECK) {
    reason = "check_violation";
    facts.constraint = constraint_named(msg);
  } else if (extended == SQLITE_CONSTRAINT_UNIQUE || extended == SQLITE_CONSTRAINT_PRIMARYKEY) {
    reason = "unique_violation";
    facts.constraint = constraint_named(msg);
  } else if (starts_with(msg, "no such column") || msg.find("has no column named") != std::string::npos) {
    reason = "undefined_column";
  }
  throw error(errc::database_error, fmt::format("SQLite {}: {}", context, msg), reason, std::move(facts));
}

::sqlite3_stmt* connection::prepare(std::string_view sql) {
  auto it = cache_.find(std::string(sql));
  if (it != cache_.end()) return it->second;
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                    &stmt, nullptr);
  if (rc != SQLITE_OK) fail(rc, "prepare");
  cache_.emplace(std::string(sql), stmt);
  return stmt;
}

std::vector<row> connection::query(std::string_view sql, const std::vector<param>& params,
                                   const call_options& limits) {
  struct progress_guard {
    ::sqlite3* db;
    bool on;
    ~progress_guard() {
      if (on) sqlite3_progress_handler(db, 0, nullptr, nullptr);
    }
  } progress{db_, limits.limited()};
  if (progress.on) {
    spool::detail::check_call(limits, "statement");
    sqlite3_progress_handler(
        db_, 1000,
        [](void* ctx) -> int {
          return *spool::detail::interruption(*static_cast<const call_options*>(ctx)) ? 1 : 0;
        },
        const_cast<call_options*>(&limits));
  }
  sqlite3_stmt* stmt = prepare(sql);
  // An autocommit write queues on the process's write gate like BEGIN
  // IMMEDIATE does: left to SQLite's sleeping busy handler, a steady stream of
  // gated writers can starve it past busy_timeout. Released after the reset
  // below, when the statement's implicit transaction has ended.
  struct gate_scope {
    connection* c = nullptr;
    ~gate_scope() {
      if (c != nullptr) c->release_gate();
    }
  } gate;
  if (gate_ && !gate_held_ && sqlite3_get_autocommit(db_) != 0 && sqlite3_stmt_readonly(stmt) == 0) {
    if (!gate_->acquire(busy_timeout_)) {
      throw error(errc::unavailable,
                  fmt::format("SQLite database is locked: another writer in this process held it for {} ms",
                              busy_timeout_.count()),
                  "busy");
    }
    gate_held_ = true;
    gate.c = this;
  }
  // Reset even when a step throws, so the cached statement is reusable.
  struct resetter {
    sqlite3_stmt* s;
    ~resetter() {
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
    }
  } reset{stmt};
  for (std::size_t i = 0; i < params.size(); ++i) {
    const int idx = static_cast<int>(i) + 1;
    int rc = SQLITE_OK;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::nullptr_t>) {
            rc = sqlite3_bind_null(stmt, idx);
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            rc = sqlite3_bind_int64(stmt, idx, v);
          } else if constexpr (std::is_same_v<T, double>) {
            rc = sqlite3_bind_double(stmt, idx, v);
          } else {
            rc = sqlite3_bind_text(stmt, idx, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
          }
        },
        params[i]);
    if (rc != SQLITE_OK) fail(rc, "bind");
  }
  // An autocommit write commits inside its last step.
  const bool commits = sqlite3_get_autocommit(db_) != 0 && sqlite3_stmt_readonly(stmt) == 0;
  std::vector<row> rows;
  const int cols = sqlite3_column_count(stmt);
  for (;;) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) break;
    if (rc == SQLITE_INTERRUPT && progress.on) {
      const std::string why = spool::detail::interruption(limits);
      throw error(errc::unavailable, fmt::format("statement interrupted ({}); SQLite undid it", why),
                  why.empty() ? "cancelled" : why);
    }
    if (rc != SQLITE_ROW) fail(rc, "step", commits);
    row r;
    r.reserve(static_cast<std::size_t>(cols));
    for (int c = 0; c < cols; ++c) {
      if (sqlite3_column_type(stmt, c) == SQLITE_NULL) {
        r.emplace_back(std::nullopt);
      } else {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
        r.emplace_back(std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt, c))));
      }
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

long long connection::changes() const noexcept { return sqlite3_changes64(db_); }

void connection::exec_script(const std::string& sql, bool committing) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (err != nullptr) sqlite3_free(err);
  if (rc != SQLITE_OK) fail(rc, committing ? "commit" : "script", committing);
}

void connection::begin_immediate() {
  if (gate_ && !gate_held_) {
    if (!gate_->acquire(busy_timeout_)) {
      throw error(errc::unavailable,
                  fmt::format("SQLite database is locked: another writer in this process held it for {} ms",
                              busy_timeout_.count()),
                  "busy");
    }
    gate_held_ = true;
  }
  try {
    exec_script("BEGIN IMMEDIATE");
  } catch (...) {
    release_gate();
    throw;
  }
}

void connection::commit() {
  exec_script("COMMIT", /*committing=*/true);
  release_gate();
}

void connection::rollback() noexcept {
  if (db_ != nullptr && sqlite3_get_autocommit(db_) == 0)
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  release_gate();
}

void connection::release_gate() noexcept {
  if (gate_held_) {
    gate_held_ = false;
    gate_->release();
  }
}

}  // namespace spool::sqlite::detail
