#include "serve/console/sessions.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <vector>

#include "spool/error.hpp"

namespace spool::serve::console {

bool equal_secret(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_hex(std::size_t n) {
  std::vector<unsigned char> bytes(n);
  if (RAND_bytes(bytes.data(), static_cast<int>(n)) != 1) {
    throw spool::error(errc::unavailable, "the console found no randomness for a session", "no_randomness");
  }
  std::string out;
  out.reserve(2 * n);
  for (const auto b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

session session_store::open(std::string user) {
  session s{random_hex(32), random_hex(32), std::move(user), std::chrono::steady_clock::now()};
  std::lock_guard lock(mu_);
  if (sessions_.size() >= max_sessions) {
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.touched < oldest->second.touched) oldest = it;
    }
    sessions_.erase(oldest);
  }
  s.touched = ++touches_;
  sessions_[s.id] = s;
  return s;
}

std::optional<session> session_store::find(std::string_view cookie_header) {
  const auto id = cookie_value(cookie_header);
  if (id.empty()) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.last_seen > idle_limit) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.last_seen = now;
  it->second.touched = ++touches_;
  return it->second;
}

void session_store::close(std::string_view cookie_header) {
  const auto id = cookie_value(cookie_header);
  std::lock_guard lock(mu_);
  sessions_.erase(id);
}

std::string session_store::cookie_value(std::string_view header) {
  const std::string_view name = cookie_name;
  std::size_t pos = 0;
  while (pos < header.size()) {
    auto end = header.find(';', pos);
    if (end == std::string_view::npos) end = header.size();
    auto item = header.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    if (item.size() > name.size() && item.substr(0, name.size()) == name && item[name.size()] == '=') {
      return std::string(item.substr(name.size() + 1));
    }
    pos = end + 1;
  }
  return {};
}

std::string session_store::set_cookie(const std::string& id, bool tls) {
  return fmt::format("{}={}; Path=/console; HttpOnly; SameSite=Strict{}", cookie_name, id,
                     tls ? "; Secure" : "");
}

std::string session_store::clear_cookie(bool tls) {
  return fmt::format("{}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{}", cookie_name,
                     tls ? "; Secure" : "");
}

}  // namespace spool::serve::console
