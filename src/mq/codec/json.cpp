// The codec's shared JSON helpers (json.hpp).
#include "mq/codec/json.hpp"

#include "common/text/utf8.hpp"

namespace spool::mq::detail::codec {
namespace {

// True when key equals name under simple case folding. name is ASCII letters only, so the only non-ASCII code
// points that can match are U+017F (folds with s) and U+212A KELVIN SIGN (folds with k).
bool fold_equal(std::string_view key, std::string_view name) {
  std::size_t i = 0;
  for (const char n : name) {
    if (i >= key.size()) return false;
    const char want = ascii_lower(n);
    if (static_cast<unsigned char>(key[i]) < 0x80) {
      if (ascii_lower(key[i]) != want) return false;
      ++i;
    } else if (want == 's' && key.substr(i, 2) == "\xC5\xBF") {
      i += 2;
    } else if (want == 'k' && key.substr(i, 3) == "\xE2\x84\xAA") {
      i += 3;
    } else {
      return false;
    }
  }
  return i == key.size();
}

}  // namespace

// The field a (decoded) key names: an exact match first, else a match under case folding.
field match_field(std::string_view key) {
  for (int f = 0; f < kUnknown; ++f) {
    if (key == kFieldNames[f]) return static_cast<field>(f);
  }
  for (int f = 0; f < kUnknown; ++f) {
    if (fold_equal(key, kFieldNames[f])) return static_cast<field>(f);
  }
  return kUnknown;
}

// The JSON type a value starting with c has, for type errors; null when c starts no value (or null).
const char* json_kind(char c) {
  if (c == '{') return "object";
  if (c == '[') return "array";
  if (c == '"') return "string";
  if (c == 't' || c == 'f') return "bool";
  return c == '-' || is_digit(c) ? "number" : nullptr;
}

}  // namespace spool::mq::detail::codec
