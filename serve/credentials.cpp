#include "serve/credentials.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

#include "spool/error.hpp"

namespace spool::serve {

namespace {
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool is_account(const std::string& s) {
  return s.size() == 12 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
}  // namespace

credential_store credential_store::parse(std::string_view text) {
  credential_store store;
  std::istringstream in{std::string(text)};
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const auto w = words(line);
    if (w.empty() || w[0][0] == '#') continue;
    if (w.size() < 2 || w.size() > 3) {
      throw error(
          errc::invalid_argument,
          fmt::format("credentials line {}: expected ACCESS_KEY_ID SECRET_ACCESS_KEY [ACCOUNT], got {} words",
                      number, w.size()),
          "invalid_credentials");
    }
    credential c{w[0], w[1], w.size() == 3 ? w[2] : std::string(default_account)};
    if (!is_account(c.account)) {
      throw error(errc::invalid_argument,
                  fmt::format("credentials line {}: the account must be 12 digits", number),
                  "invalid_credentials");
    }
    if (store.by_key_.count(c.access_key_id) != 0) {
      throw error(errc::invalid_argument,
                  fmt::format("credentials line {}: access key {} appears twice", number, c.access_key_id),
                  "invalid_credentials");
    }
    store.by_key_.emplace(c.access_key_id, std::move(c));
  }
  return store;
}

credential_store credential_store::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw error(errc::not_found, fmt::format("cannot read the credentials file {}", path),
                "credentials_file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

const credential* credential_store::find(std::string_view access_key_id) const {
  const auto it = by_key_.find(access_key_id);
  return it == by_key_.end() ? nullptr : &it->second;
}

}  // namespace spool::serve
