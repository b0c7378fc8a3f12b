// spool::error — the one exception type every Spool call throws.
// Callers branch on code() and retryable(); reason() refines the code with a
// stable snake_case string. Thread safety: immutable after construction.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace spool {

// The one list of error codes (DESIGN.md, Errors). Do not add codes here
// without updating docs/ARCHITECTURE.md.
enum class errc {
  invalid_argument,
  not_found,
  already_exists,
  duplicate,
  conflict,
  invalid_state,
  lease_lost,
  transaction_required,
  unauthorized,
  stopped,
  unavailable,
  in_doubt,
  database_error,
};

// The snake_case name of a code ("invalid_argument").
[[nodiscard]] std::string_view to_string(errc code) noexcept;

// True only for codes where nothing was done and a retry may succeed.
[[nodiscard]] constexpr bool is_retryable(errc code) noexcept { return code == errc::unavailable; }

// What a database reported about a failure, as fields rather than text. Each
// engine fills it in one place (src/engine/*/), so callers map errors by
// constraint name or condition without reading a message.
struct engine_facts {
  std::string sqlstate;    // PostgreSQL's SQLSTATE; empty on SQLite
  std::string constraint;  // the violated constraint's name, when the database named one
  int extended_code = 0;   // SQLite's extended result code; 0 on PostgreSQL
};

class error : public std::runtime_error {
 public:
  // reason defaults to the code's name; sqlstate is empty unless the
  // database reported one.
  error(errc code, const std::string& message, std::string reason = {}, std::string sqlstate = {});

  // An error carrying every fact the engine reported.
  error(errc code, const std::string& message, std::string reason, engine_facts facts);

  // The same error (code, reason and facts) with a message that adds context.
  error(const error& cause, const std::string& message);

  [[nodiscard]] errc code() const noexcept { return code_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  [[nodiscard]] bool retryable() const noexcept { return is_retryable(code_); }
  [[nodiscard]] const std::string& sqlstate() const noexcept { return facts_.sqlstate; }
  // The violated constraint's name ("spool_malformed_row"); empty when none.
  [[nodiscard]] const std::string& constraint() const noexcept { return facts_.constraint; }
  // SQLite's extended result code (SQLITE_CONSTRAINT_CHECK); 0 otherwise.
  [[nodiscard]] int extended_code() const noexcept { return facts_.extended_code; }

 private:
  errc code_;
  std::string reason_;
  engine_facts facts_;
};

}  // namespace spool
