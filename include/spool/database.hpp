// spool::database — a handle to one database, opened from a URI, owning that
// engine's bounded connection pool (DESIGN.md, URIs and Connections).
// Thread safety: a database handle may be copied and shared between threads;
// copies share one pool.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace spool {

enum class engine { postgres, sqlite };

// "postgres" or "sqlite": the engine's name in URIs, SQL folders and the CLI.
[[nodiscard]] std::string_view engine_name(engine e) noexcept;

// A bound statement parameter. Values are always bound, never spliced into SQL.
using param = std::variant<std::nullptr_t, std::int64_t, double, std::string>;
// One result row, every column as text (SQL NULL is nullopt).
using row = std::vector<std::optional<std::string>>;

enum class sqlite_synchronous { off, normal, full, extra };

struct database_options {
  std::size_t pool_size = 8;                                  // connections at most
  std::chrono::seconds connect_timeout{5};                    // PostgreSQL connect
  std::chrono::milliseconds sqlite_busy_timeout{5000};        // lock wait, then `unavailable`
  sqlite_synchronous sqlite_sync = sqlite_synchronous::full;  // durability of each commit
};

// The process's shared LISTEN connection of a PostgreSQL database (the one
// that wakes runtimes with notify on). Inactive until something listens, and
// always on SQLite, whose wake-ups stay in the process.
struct listener_info {
  bool active = false;          // something listens on this database
  bool connected = false;       // the LISTEN connection is up and listening now
  std::uint64_t reconnects = 0;  // times it was opened again after losing one
};

namespace detail {
class database_impl;
}

class database {
 public:
  // Opens by URI: postgres://…, postgresql://… (passed whole to libpq) or
  // sqlite:PATH. Validates the URI but does not connect.
  // Throws error(invalid_argument) for any other form, naming the value with
  // its password redacted; invalid_argument for a zero pool size.
  [[nodiscard]] static database open(std::string_view uri, database_options options = {});
  // Opens PostgreSQL from a key/value conninfo ("host=… dbname=…").
  [[nodiscard]] static database open_postgres(std::string_view conninfo, database_options options = {});

  [[nodiscard]] engine kind() const noexcept;
  // The URI or conninfo with any password replaced by ***; safe to log.
  [[nodiscard]] const std::string& display_name() const noexcept;

  // Runs one statement in its own auto-committed transaction; for tooling and
  // tests. Errors: unavailable, in_doubt, database_error.
  std::vector<row> exec(std::string_view sql, const std::vector<param>& params = {});

  // The shared listener's state now. Never throws; safe from any thread.
  [[nodiscard]] listener_info listener() const noexcept;

  // Internal: the engine implementation behind this handle.
  [[nodiscard]] detail::database_impl& impl() const noexcept { return *impl_; }

 private:
  explicit database(std::shared_ptr<detail::database_impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::database_impl> impl_;
};

// Replaces the password of a URI or conninfo with ***.
[[nodiscard]] std::string redact_password(std::string_view uri_or_conninfo);

}  // namespace spool
