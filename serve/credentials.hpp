// The credentials `spool serve --credentials FILE` accepts: one per line,
// `ACCESS_KEY_ID SECRET_ACCESS_KEY [ACCOUNT]`, blank lines and `#` comments
// allowed. ACCOUNT is the 12-digit account id in the caller's queue URLs.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace spool::serve {

// The account of queue URLs when the server runs with --no-auth, and of a
// credential whose line names none.
inline constexpr std::string_view default_account = "000000000000";

struct credential {
  std::string access_key_id;
  std::string secret;
  std::string account;
};

// Immutable once loaded: thread-safe for lookups.
class credential_store {
 public:
  // Parses the file's text. Throws spool::error(invalid_argument) naming the
  // line for a malformed line, a duplicate key or an account that is not 12
  // digits; never repeats a secret.
  static credential_store parse(std::string_view text);
  // Reads and parses a file. Throws spool::error(not_found) when unreadable.
  static credential_store load(const std::string& path);

  // The credential of an access key id, or nullptr.
  [[nodiscard]] const credential* find(std::string_view access_key_id) const;
  [[nodiscard]] std::size_t size() const noexcept { return by_key_.size(); }

 private:
  std::map<std::string, credential, std::less<>> by_key_;
};

}  // namespace spool::serve
