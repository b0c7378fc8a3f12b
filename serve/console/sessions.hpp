// The console's logins: a session per browser, named by a random id in an
// HttpOnly, SameSite=Strict cookie, with its own CSRF token that every action
// must echo in a header. Sessions live in this process only (a restart logs
// everyone out) and expire after 12 hours without a request.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace spool::serve::console {

struct session {
  std::string id;    // the cookie's value
  std::string csrf;  // echoed by every action in X-Spool-CSRF
  std::string user;  // as the audit records it
  std::chrono::steady_clock::time_point last_seen;
  std::uint64_t touched = 0;  // the store's count at the last request: the least is dropped first
};

// Thread safety: every member is safe from many threads at once.
class session_store {
 public:
  static constexpr const char* cookie_name = "spool_console";
  static constexpr std::size_t max_sessions = 1000;  // the oldest is dropped beyond this
  static constexpr std::chrono::hours idle_limit{12};

  // A new session for user. Errors: spool::error(unavailable) when the system
  // has no randomness.
  session open(std::string user);
  // The live session a Cookie header names, touched; nullopt otherwise.
  std::optional<session> find(std::string_view cookie_header);
  void close(std::string_view cookie_header);

  // The value of cookie_name in a Cookie header; empty when absent.
  [[nodiscard]] static std::string cookie_value(std::string_view cookie_header);
  // The Set-Cookie header value for a session (Secure under TLS), or one that clears it.
  [[nodiscard]] static std::string set_cookie(const std::string& id, bool tls);
  [[nodiscard]] static std::string clear_cookie(bool tls);

 private:
  std::mutex mu_;
  std::map<std::string, session> sessions_;
  std::uint64_t touches_ = 0;
};

// True when a and b are equal, in time that depends on their lengths only.
[[nodiscard]] bool equal_secret(std::string_view a, std::string_view b) noexcept;

// n random bytes as lower-case hex. Errors: spool::error(unavailable).
[[nodiscard]] std::string random_hex(std::size_t n);

}  // namespace spool::serve::console
