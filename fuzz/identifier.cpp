// Fuzz target: the one identifier rule for configured SQL names
// (common/identifier.hpp) as the mq, ops and outbox configurations and the
// migrator use it. What is accepted is [a-z0-9_] only and quotes to exactly
// "name"; quote_identifier of any text unquotes back to that text (every
// embedded quote doubled); a rejection names the value escaped, so the
// message holds printable ASCII only; configurations and migration scripts
// with fuzzed names either render or raise spool::error(invalid_argument).
#include "common/identifier.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "spool/migrate.hpp"
#include "spool/outbox/writer.hpp"

using spool::errc;
using spool::fuzz::check;
using spool::fuzz::check_error;

namespace {

bool identifier_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

// The inverse of quote_identifier; nullopt when q is not one quoted name.
std::optional<std::string> unquote(std::string_view q) {
  if (q.size() < 2 || q.front() != '"' || q.back() != '"') return std::nullopt;
  std::string out;
  for (std::size_t i = 1; i + 1 < q.size(); ++i) {
    if (q[i] == '"') {
      if (i + 2 >= q.size() || q[i + 1] != '"')
        return std::nullopt;  // an unescaped quote ends the name early
      ++i;
    }
    out += q[i];
  }
  return out;
}

void check_identifier(std::string_view value, std::size_t max_bytes) {
  try {
    spool::detail::validate_identifier("table", value, max_bytes);
    check(!value.empty() && value.size() <= max_bytes, "identifier length outside 1..max accepted");
    for (char c : value) check(identifier_char(c), "identifier with a character outside [a-z0-9_] accepted");
    check(!(value[0] >= '0' && value[0] <= '9'), "identifier starting with a digit accepted");
    check(value.substr(0, 3) != "pg_" && value.substr(0, 7) != "sqlite_", "reserved prefix accepted");
    check(spool::detail::quote_identifier(value) == "\"" + std::string(value) + "\"",
          "an accepted identifier does not quote to \"name\"");
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
    check(e.reason() == "invalid_identifier", "identifier error without reason invalid_identifier");
    const std::string_view msg = e.what();
    std::size_t quotes = 0;
    for (char c : msg) {
      check(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f,
            "identifier error message carries a raw non-printable byte");
      quotes += c == '"';
    }
    check(quotes == 2, "identifier error message carries an unescaped quote");
  }
  const std::string quoted = spool::detail::quote_identifier(value);
  const auto back = unquote(quoted);
  check(back && *back == value, "quote_identifier does not round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::size_t max_bytes = in.PickValueInArray({std::size_t{63}, std::size_t{50}, std::size_t{41}});
  const std::string a = in.ConsumeRandomLengthString(128);
  const std::string b = in.ConsumeRandomLengthString(128);
  const std::string c = in.ConsumeRemainingBytesAsString();
  check_identifier(a, max_bytes);
  check_identifier(c, max_bytes);

  spool::outbox::outbox_config oc;
  oc.schema = a;
  oc.table = b.empty() ? oc.table : b;
  oc.audit_table = c;
  try {
    spool::outbox::validate(oc);
    for (const std::string* s : {&oc.table}) {
      for (char ch : *s) check(identifier_char(ch), "outbox config accepted a bad table name");
    }
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
  }

  spool::migrate_options mo;
  mo.schema = a;
  mo.ops_table = b;
  mo.outbox_table = c;
  try {
    const std::string script = spool::migration_script(spool::engine::postgres, mo);
    check(!script.empty(), "an empty migration script");
    if (!a.empty()) {
      check(script.find(spool::detail::quote_identifier(a)) != std::string::npos,
            "schema not quoted in the script");
    }
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
  }
  return 0;
}
