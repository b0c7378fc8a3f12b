// The answer's JSON writer (json_text.hpp). Strings are the bulk of an answer
// (bodies, receipts, ids): a run of characters that need no escape is copied
// at once, and a string that is not valid UTF-8, which no stored body should
// be, is left to nlohmann's own writer so that its replacement stays exact.
#include "serve/sqs/json_text.hpp"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/text/utf8.hpp"

namespace spool::serve::sqs {

namespace {

using json = nlohmann::json;

void append_escape(std::string& out, unsigned char c) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
      return;
  }
}

// The bytes a string copies as they are: printable ASCII but the quote and
// the backslash (a byte from 0x80 up is copied too, once the string is known
// to be UTF-8).
constexpr std::array<bool, 256> plain_ascii = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
  return t;
}();

void append_string(std::string& out, std::string_view s) {
  const auto start = out.size();
  out.reserve(start + s.size() + 2);
  out += '"';
  bool utf8_checked = false;
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (plain_ascii[c]) continue;
    if (c >= 0x80) {
      if (!utf8_checked) {
        if (!spool::detail::is_utf8(s)) {
          out.resize(start);
          out += json(s).dump(-1, ' ', false, json::error_handler_t::replace);
          return;
        }
        utf8_checked = true;
      }
      continue;
    }
    out.append(s, run, i - run);
    append_escape(out, c);
    run = i + 1;
  }
  out.append(s, run, s.size() - run);
  out += '"';
}

}  // namespace

void append_json(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, member] : v.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        append_string(out, k);
        out += ':';
        append_json(out, member);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ',';
        first = false;
        append_json(out, e);
      }
      out += ']';
      return;
    }
    case json::value_t::string:
      append_string(out, v.get_ref<const std::string&>());
      return;
    case json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::number_integer:
      out += fmt::format_int(v.get<std::int64_t>()).c_str();
      return;
    case json::value_t::number_unsigned:
      out += fmt::format_int(v.get<std::uint64_t>()).c_str();
      return;
    default:  // floats and binary: rare in an answer; nlohmann's own form
      out += v.dump(-1, ' ', false, json::error_handler_t::replace);
      return;
  }
}

std::string to_json_text(const json& v) {
  std::string out;
  append_json(out, v);
  return out;
}

}  // namespace spool::serve::sqs
