// Fuzz target: database URIs and PostgreSQL conninfo strings
// (spool::database::open, open_postgres, spool::redact_password), with
// libpq's own parser (PQconninfoParse, which never connects) as the judge of
// what the password is.
//
// Properties: open/open_postgres accept or raise spool::error
// (invalid_argument) and show redact_password(text) as the display name;
// whatever libpq would read as password or sslpassword in the redacted text
// is "***"; when libpq reads a password from the original text, it reads
// "***" from the redacted one. In the structured half (first byte odd) a URI
// or conninfo is built around a known password in every spelling libpq
// accepts (percent-encoded, quoted, backslash-escaped, spaces around '=',
// any whitespace between pairs): neither the password nor its spelling may
// appear in the redacted text.
#include <fuzzer/FuzzedDataProvider.h>
#include <libpq-fe.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "spool/database.hpp"

using spool::errc;
using spool::fuzz::check;
using spool::fuzz::check_error;

namespace {

// The secrets libpq reads from text, or nullopt when libpq rejects the text.
std::optional<std::map<std::string, std::string>> libpq_secrets(const std::string& text) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(text.c_str(), &err);
  if (err != nullptr) PQfreemem(err);
  if (opts == nullptr) return std::nullopt;
  std::map<std::string, std::string> out;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    const std::string_view k = o->keyword;
    if ((k == "password" || k == "sslpassword") && o->val != nullptr) out[std::string(k)] = o->val;
  }
  PQconninfoFree(opts);
  return out;
}

// For the report of a broken property: the text with bytes outside printable ASCII as \xNN.
std::string escaped(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

void check_raw(const std::string& text) {
  const std::string shown = spool::redact_password(text);
  if (text.find('\0') != std::string::npos) return;  // libpq reads C strings
  const auto after = libpq_secrets(shown);
  if (after) {
    for (const auto& [k, v] : *after) {
      if (!v.empty() && v != "***") {
        std::fprintf(stderr, "text:     %s\nredacted: %s\n%s: %s\n", escaped(text).c_str(),
                     escaped(shown).c_str(), k.c_str(), escaped(v).c_str());
        spool::fuzz::fail("libpq reads a secret from the redacted text");
      }
    }
  }
  const auto before = libpq_secrets(text);
  if (before && !before->empty()) {
    bool masked = after.has_value();
    for (const auto& [k, v] : *before) masked = masked && (v.empty() || after->count(k) == 1);
    if (!masked) {
      std::fprintf(stderr, "text:     %s\nredacted: %s\n", escaped(text).c_str(), escaped(shown).c_str());
      spool::fuzz::fail("libpq reads a secret from the text but no masked one from the redacted text");
    }
  }

  for (int which = 0; which < 2; ++which) {
    try {
      const auto db = which == 0 ? spool::database::open(text) : spool::database::open_postgres(text);
      check(db.display_name() == shown, "display_name is not the redacted text");
    } catch (const spool::error& e) {
      check_error(e, errc::invalid_argument);
    }
  }
}

bool unreserved(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }

std::string percent(std::string_view s, bool all) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (unreserved(c) ||
        (!all && c > 0x20 && c < 0x7f &&
         std::string_view("%@/&=?#:[]'\\\"").find(static_cast<char>(c)) == std::string_view::npos)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// A conninfo value as libpq reads it back: quoted, or bare with backslashes.
std::string conninfo_value(std::string_view s, bool quoted) {
  std::string out = quoted ? "'" : "";
  for (char c : s) {
    if (c == '\\' || c == '\'' || (!quoted && std::isspace(static_cast<unsigned char>(c)))) out += '\\';
    out += c;
  }
  if (quoted) out += '\'';
  return out;
}

std::string plain(FuzzedDataProvider& in) {
  std::string s = in.ConsumeRandomLengthString(12);
  for (char& c : s) c = "abcdefghijklmnopqrstuvwxyz0123456789"[static_cast<unsigned char>(c) % 36];
  return s.empty() ? "x" : s;
}

void check_structured(FuzzedDataProvider& in) {
  const std::string password = in.ConsumeRandomLengthString(24);
  if (password.empty() || password.find('\0') != std::string::npos) return;
  const int form = in.ConsumeIntegralInRange(0, 3);
  const std::string user = plain(in), host = plain(in), db = plain(in), app = plain(in);
  std::string spelled;  // the password as written
  std::string before, after;
  std::string mask = "***";  // what a perfect redaction writes instead
  const char* key = form == 3 ? "sslpassword" : "password";
  if (form == 0) {  // postgres://user:PASSWORD@host/db
    spelled = percent(password, in.ConsumeBool());
    before = std::string(in.ConsumeBool() ? "postgresql" : "postgres") + "://" + user + ":";
    after = "@" + host + "/" + db;
  } else if (form == 1) {  // postgres://host/db?...&password=PASSWORD&...
    spelled = percent(password, in.ConsumeBool());
    before = "postgres://" + user + "@" + host + "/" + db + "?application_name=" + app + "&" +
             (in.ConsumeBool() ? "password" : "pass%77ord") + "=";
    after = in.ConsumeBool() ? "&connect_timeout=5" : "";
  } else {  // host=h [ws] password [ws] = [ws] PASSWORD [ws] dbname=d
    static constexpr std::string_view ws = " \t\n\r\f\v";
    auto space = [&](bool at_least_one) {
      std::string s(at_least_one ? 1 : 0, ' ');
      const int n = in.ConsumeIntegralInRange(0, 2);
      for (int i = 0; i < n; ++i) s += ws[in.ConsumeIntegralInRange<std::size_t>(0, ws.size() - 1)];
      if (!s.empty()) s[0] = ws[in.ConsumeIntegralInRange<std::size_t>(0, ws.size() - 1)];
      return s;
    };
    const bool quoted = in.ConsumeBool();
    spelled = conninfo_value(password, quoted);
    if (quoted) mask = "'***'";
    before = space(false) + "host=" + host + space(true) + key + space(false) + "=" + space(false);
    after = (quoted && in.ConsumeBool() ? "" : space(true)) + "dbname=" + db + space(false);
  }
  const std::string text = before + spelled + after;
  const auto secrets = libpq_secrets(text);
  if (!secrets || !secrets->count(key) || secrets->at(key) != password)
    return;  // not the spelling libpq reads
  const std::string ideal = before + mask + after;
  const std::string shown = spool::redact_password(text);
  const bool leaks_password =
      ideal.find(password) == std::string::npos && shown.find(password) != std::string::npos;
  const bool leaks_spelling =
      ideal.find(spelled) == std::string::npos && shown.find(spelled) != std::string::npos;
  if (leaks_password || leaks_spelling) {
    std::fprintf(stderr, "text:     %s\nredacted: %s\n", escaped(text).c_str(), escaped(shown).c_str());
    spool::fuzz::fail("the password or its spelling appears in the redacted text");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    check_raw(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  } else {
    FuzzedDataProvider in(data + 1, size - 1);
    check_structured(in);
  }
  return 0;
}
