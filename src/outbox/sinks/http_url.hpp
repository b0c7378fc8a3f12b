// The webhook URL of the HTTP sink (outbox.md §8), split into what
// cpp-httplib's client needs.
#pragma once

#include <string>
#include <string_view>

namespace spool::outbox::detail {

struct http_url {
  bool tls = false;
  std::string host;          // without brackets for an IPv6 literal
  int port = 0;              // the scheme's default when the URL names none
  std::string target = "/";  // path and query, as given
};

// Parses http://HOST[:PORT][/PATH][?QUERY] or https://…. Errors:
// invalid_argument (invalid_config) naming the URL, with any credentials
// masked: another scheme, no host, a bad port, user:password@, a fragment,
// blanks or control characters.
[[nodiscard]] http_url parse_http_url(std::string_view url);

}  // namespace spool::outbox::detail
