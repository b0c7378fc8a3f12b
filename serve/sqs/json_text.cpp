// The answer's JSON writer (json_text.hpp). Strings, the bulk of an answer,
// go through the library's one JSON string writer (common/text/json_string).
#include "serve/sqs/json_text.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/text/json_string.hpp"

namespace spool::serve::sqs {

namespace {

using json = nlohmann::json;

// A string that is not valid UTF-8, which no stored body should be, is left
// to nlohmann's own writer so that its replacement characters stay exact.
void append_string(std::string& out, std::string_view s) {
  const auto start = out.size();
  if (spool::detail::append_json_string(out, s, false)) return;
  out.resize(start);
  out += json(s).dump(-1, ' ', false, json::error_handler_t::replace);
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
