#include "common.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <limits>

#include "common/text/rfc3339.hpp"

namespace spool::cli {

namespace {

[[noreturn]] void bad_duration(std::string_view text, std::string_view flag, std::string_view why) {
  throw spool::error(spool::errc::invalid_argument,
                     fmt::format("{}: invalid duration \"{}\": {}", flag, text, why));
}

// The password of a postgres URI, from the userinfo ("u:pw@host") or a
// "password=" query parameter; empty when there is none.
std::string uri_password(std::string_view uri) {
  if (const auto scheme = uri.find("://"); scheme != std::string_view::npos) {
    const auto rest = uri.substr(scheme + 3);
    const auto authority = rest.substr(0, rest.find_first_of("/?"));
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
      const auto userinfo = authority.substr(0, at);
      if (const auto colon = userinfo.find(':'); colon != std::string_view::npos) {
        return std::string(userinfo.substr(colon + 1));
      }
    }
  }
  for (std::size_t pos = uri.find("password="); pos != std::string_view::npos;
       pos = uri.find("password=", pos + 1)) {
    if (pos > 0 && (uri[pos - 1] == '?' || uri[pos - 1] == '&')) {
      const auto value = uri.substr(pos + 9);
      return std::string(value.substr(0, value.find('&')));
    }
  }
  return {};
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text, std::string_view flag) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0)
    bad_duration(text, flag, "expected a non-negative integer with an optional unit ms, s, m, h or d");

  const std::string_view unit = text.substr(digits);
  std::int64_t factor = 0;  // milliseconds per unit
  if (unit.empty() || unit == "s") {
    factor = 1000;
  } else if (unit == "ms") {
    factor = 1;
  } else if (unit == "m") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else if (unit == "d") {
    factor = 86'400'000;
  } else {
    bad_duration(text, flag, "unknown unit (use ms, s, m, h or d)");
  }

  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc{} || end != text.data() + digits ||
      value > std::numeric_limits<std::int64_t>::max() / factor) {
    bad_duration(text, flag, "too large");
  }
  return std::chrono::milliseconds{value * factor};
}

std::chrono::seconds parse_seconds(std::string_view text, std::string_view flag) {
  const auto ms = parse_duration(text, flag);
  if (ms.count() % 1000 != 0) bad_duration(text, flag, "must be a whole number of seconds");
  return std::chrono::duration_cast<std::chrono::seconds>(ms);
}

std::string rfc3339(std::int64_t unix_seconds) {
  // Years outside 0000–9999 cannot be written in RFC 3339; such a value is
  // not a real timestamp, so show the raw number rather than invent a date.
  constexpr std::int64_t min_s = -62167219200;  // 0000-01-01T00:00:00Z
  constexpr std::int64_t max_s = 253402300799;  // 9999-12-31T23:59:59Z
  if (unix_seconds < min_s || unix_seconds > max_s) return std::to_string(unix_seconds);
  const spool::detail::micros_time t{std::chrono::seconds{unix_seconds}};
  return spool::detail::format_rfc3339(t, {spool::detail::rfc3339_style::fraction::none, 'T', true});
}

void emit_json(cli_context& ctx, const ojson& doc) {
  ctx.out += doc.dump(-1, ' ', false, ojson::error_handler_t::replace);
  ctx.out += '\n';
}

void emit_line(cli_context& ctx, std::string_view line) {
  ctx.out += line;
  ctx.out += '\n';
}

spool::database open_database(const cli_context& ctx, std::size_t connections) {
  spool::database_options o;
  o.pool_size = std::max(o.pool_size, connections);
  return spool::database::open(ctx.db_uri, o);
}

void add_notify_option(CLI::App& app, cli_context& ctx) {
  app.add_flag(
      "--notify", ctx.notify,
      "PostgreSQL wake-ups: writers NOTIFY at commit, workers and relays LISTEN while idle, so work "
      "starts at once instead of at the next poll (polling stays the fallback). NOTIFY serialises "
      "commits cluster-wide for a moment: enable it when latency matters more than peak commit rate. "
      "Ignored on SQLite, where a process's own commits wake its workers.");
}

void add_connection_options(CLI::App& app, cli_context& ctx) {
  app.add_option("--db", ctx.db_uri,
                 "Database URI: postgres://…, postgresql://… (passed to libpq) or sqlite:PATH "
                 "[default: sqlite:spool.db]. Accepted anywhere on the command line.");
  app.add_flag(
      "--json", ctx.json,
      "Print one JSON document instead of human-readable text. Accepted anywhere on the command line.");
  app.add_option("--log-level", ctx.log_level,
                 "Log to stderr at this level and above: trace, debug, info, warn, error or off "
                 "[default: warn]. Accepted anywhere on the command line.");
}

std::string sanitize_message(std::string_view message, std::string_view db_uri) {
  // One stderr line is the contract: fold the line breaks of multi-line
  // server messages and squeeze the resulting runs of blanks.
  std::string out;
  out.reserve(message.size());
  for (char c : message) {
    const bool blank = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (blank) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();

  // The library already redacts passwords; this is the last line of defence
  // for messages that quote the URI or password some other way. Very short
  // passwords are left alone: masking every "ab" would garble the message.
  if (!db_uri.empty()) {
    replace_all(out, db_uri, spool::redact_password(db_uri));
    if (const auto pw = uri_password(db_uri); pw.size() >= 4) replace_all(out, pw, "***");
  }
  return out;
}

std::string error_line(const spool::error& e, std::string_view db_uri) {
  const std::string_view code = spool::to_string(e.code());
  std::string line = fmt::format("spool: {}", code);
  if (e.reason() != code) line += fmt::format("/{}", e.reason());
  return fmt::format("{}: {}", line, sanitize_message(e.what(), db_uri));
}

}  // namespace spool::cli
