// The request parser (json_parse.hpp): one loop over the library's scanner,
// a stack of the containers still open, and the slot the next value fills.
#include "serve/sqs/json_parse.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/text/json_scanner.hpp"

namespace spool::serve::sqs {

namespace {

using json = nlohmann::json;
using spool::detail::json_scanner;
using spool::detail::str_mode;

// A number's text as nlohmann types it: unsigned or signed while it fits 64
// bits, else (or with a fraction or an exponent) a double, which must be
// finite.
std::optional<json> number_of(const std::string& text) {
  const char* first = text.data();
  const char* last = first + text.size();
  if (text.find_first_of(".eE") == std::string::npos) {
    if (text.front() == '-') {
      std::int64_t v = 0;
      if (std::from_chars(first, last, v).ec == std::errc{}) return json(v);
    } else {
      std::uint64_t v = 0;
      if (std::from_chars(first, last, v).ec == std::errc{}) return json(v);
    }
  }
  // strtod reads '.' as the decimal point in the "C" locale every program
  // starts in; spool serve never calls setlocale. (from_chars would refuse an
  // underflow such as 1e-400, which nlohmann reads as 0.)
  const double d = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(d)) return std::nullopt;
  return json(d);
}

// The slot of the member named by the key at the scanner (a string, then a
// colon) in object o: a repeated key's value is replaced, as nlohmann does.
json* member_slot(json_scanner& s, json& o, std::string& key) {
  if (s.peek() != '"') return nullptr;
  key.clear();
  if (!s.string<str_mode::decode>(&key) || !s.skip_ws_more() || s.peek() != ':') return nullptr;
  s.advance();
  return &o.get_ref<json::object_t&>()[key];
}

}  // namespace

std::optional<json> parse_json(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte-order mark, as nlohmann
  json_scanner s(text, true, true);
  json root;
  json* slot = &root;
  std::vector<json*> open;  // each points into its parent, which does not change while it is open
  std::string key;
  std::string scratch;
  for (;;) {
    if (!s.skip_ws_more()) return std::nullopt;
    const char c = s.peek();
    if (c == '{' || c == '[') {
      *slot = c == '{' ? json::object() : json::array();
      s.advance();
      if (!s.skip_ws_more()) return std::nullopt;
      if (s.peek() != (c == '{' ? '}' : ']')) {
        open.push_back(slot);
        slot = c == '{' ? member_slot(s, *slot, key) : &slot->emplace_back();
        if (slot == nullptr) return std::nullopt;
        continue;
      }
      s.advance();  // an empty container
    } else if (c == '"') {
      scratch.clear();
      if (!s.string<str_mode::decode>(&scratch)) return std::nullopt;
      *slot = std::move(scratch);
    } else if (c == 't' || c == 'f' || c == 'n') {
      if (!s.literal(nullptr)) return std::nullopt;
      *slot = c == 'n' ? json(nullptr) : json(c == 't');
    } else {
      scratch.clear();
      if (!s.number(&scratch)) return std::nullopt;
      auto n = number_of(scratch);
      if (!n) return std::nullopt;
      *slot = std::move(*n);
    }
    // A value is complete: close containers until one takes another element.
    for (;;) {
      if (open.empty()) {
        s.skip_ws();
        if (!s.at_end()) return std::nullopt;
        return root;
      }
      if (!s.skip_ws_more()) return std::nullopt;
      json& parent = *open.back();
      if (s.peek() == ',') {
        s.advance();
        if (!s.skip_ws_more()) return std::nullopt;
        slot = parent.is_object() ? member_slot(s, parent, key) : &parent.emplace_back();
        if (slot == nullptr) return std::nullopt;
        break;
      }
      if (s.peek() != (parent.is_object() ? '}' : ']')) return std::nullopt;
      s.advance();
      open.pop_back();
    }
  }
}

}  // namespace spool::serve::sqs
