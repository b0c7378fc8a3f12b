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

class error : public std::runtime_error {
 public:
  // reason defaults to the code's name; sqlstate is empty unless the
  // database reported one.
  error(errc code, const std::string& message, std::string reason = {}, std::string sqlstate = {});

  [[nodiscard]] errc code() const noexcept { return code_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  [[nodiscard]] bool retryable() const noexcept { return is_retryable(code_); }
  [[nodiscard]] const std::string& sqlstate() const noexcept { return sqlstate_; }

 private:
  errc code_;
  std::string reason_;
  std::string sqlstate_;
};

}  // namespace spool
