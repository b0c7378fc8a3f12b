// webhook_options: the secret file, headers and timeout of the webhook sink.
#include "webhook_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common.hpp"
#include "spool/error.hpp"

namespace spool::cli {

namespace {

std::string trim(std::string s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && blank(s.back())) s.pop_back();
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), blank));
  return s;
}

std::string read_secret_file(const std::string& path, std::string_view flag = "--secret-file") {
  std::ifstream in(path, std::ios::binary);
  if (!in) usage(fmt::format("{} {}: cannot read it: {}", flag, path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  // One trailing line break, as an editor or `echo` leaves it.
  if (secret.ends_with("\r\n")) {
    secret.resize(secret.size() - 2);
  } else if (secret.ends_with('\n')) {
    secret.pop_back();
  }
  if (secret.empty()) usage(fmt::format("{} {}: the file is empty", flag, path));
  return secret;
}

}  // namespace

spool::outbox::http_sink_options webhook_options(const std::string& url, const webhook_flags& f) {
  spool::outbox::http_sink_options o;
  o.url = url;
  if (!f.secret_file.empty()) {
    o.secret = read_secret_file(f.secret_file);
  } else if (const char* env = std::getenv("SPOOL_WEBHOOK_SECRET"); env != nullptr && *env != '\0') {
    o.secret = env;
  } else {
    usage("--sink http: the webhook needs a secret: --secret-file PATH or SPOOL_WEBHOOK_SECRET");
  }
  if (!f.standard_secrets_file.empty()) {
    std::istringstream lines(read_secret_file(f.standard_secrets_file, "--standard-webhooks-secrets"));
    for (std::string line; std::getline(lines, line);) {
      if (line = trim(line); !line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) o.standard_webhook_secrets.push_back(line);
    }
    if (o.standard_webhook_secrets.empty()) {
      usage(fmt::format("--standard-webhooks-secrets {}: no secret in the file", f.standard_secrets_file));
    }
  }
  o.ca_file = f.ca_file;
  if (!f.timeout.empty()) {
    o.read_timeout = parse_duration(f.timeout, "--http-timeout");
    o.connect_timeout = std::min(o.read_timeout, o.connect_timeout);
  }
  for (const auto& h : f.headers) {
    const auto colon = h.find(':');
    if (colon == std::string::npos) usage(fmt::format("--header {}: expected 'Name: value'", h));
    o.headers.emplace_back(trim(h.substr(0, colon)), trim(h.substr(colon + 1)));
  }
  return o;
}

}  // namespace spool::cli
