// parse_http_url: the URL forms the webhook sink accepts.
#include "http_url.hpp"

#include <fmt/format.h>

#include <charconv>

#include "outbox/text.hpp"
#include "spool/error.hpp"

namespace spool::outbox::detail {

namespace {

[[noreturn]] void invalid(std::string_view url, std::string_view why) {
  // The URL may carry credentials: the sanitiser masks user:password@.
  throw error(errc::invalid_argument,
              fmt::format("http sink: url \"{}\": {}", sanitize_error_text(url, 512), why), "invalid_config");
}

}  // namespace

http_url parse_http_url(std::string_view url) {
  http_url out;
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
    out.port = 80;
  } else if (url.starts_with("https://")) {
    rest = url.substr(8);
    out.tls = true;
    out.port = 443;
  } else {
    invalid(url, "expected an http:// or https:// URL");
  }
  for (const char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      invalid(url, "blanks and control characters are not allowed");
  }
  if (url.find('#') != std::string_view::npos) invalid(url, "a fragment is not allowed");
  const auto slash = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    out.target = std::string(rest.substr(slash));
    if (out.target.front() == '?') out.target.insert(0, "/");
  }
  if (authority.find('@') != std::string_view::npos) {
    invalid(url, "credentials in the URL are not supported (send them as a header)");
  }
  std::string_view host = authority, port;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) invalid(url, "unterminated IPv6 address");
    host = authority.substr(1, close - 1);
    const auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') invalid(url, "unexpected text after the IPv6 address");
      port = after.substr(1);
      if (port.empty()) invalid(url, "empty port");
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) invalid(url, "empty port");
  }
  if (host.empty()) invalid(url, "no host");
  out.host = std::string(host);
  if (!port.empty()) {
    int p = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc{} || end != port.data() + port.size() || p < 1 || p > 65535) {
      invalid(url, fmt::format("port {} is not in 1..65535", port));
    }
    out.port = p;
  }
  return out;
}

}  // namespace spool::outbox::detail
