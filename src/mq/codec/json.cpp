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

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Length of the well-formed UTF-8 sequence starting at p (1 for ASCII), or 0 (common/utf8.hpp).
std::size_t utf8_seq_len(const char* p, const char* end) noexcept {
  return spool::detail::utf8_sequence(std::string_view(p, static_cast<std::size_t>(end - p)), 0);
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    const char b[2] = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    out.append(b, 2);
  } else if (cp < 0x10000) {
    const char b[3] = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                       static_cast<char>(0x80 | (cp & 0x3F))};
    out.append(b, 3);
  } else {
    const char b[4] = {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
                       static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    out.append(b, 4);
  }
}

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

// Appends one byte of the payload for an error text: printable ASCII as is, anything else as \xNN.
void append_quoted_char(std::string& out, unsigned char c) {
  out += '\'';
  if (c == '\'' || c == '\\') {
    out += '\\';
    out += static_cast<char>(c);
  } else if (c >= 0x20 && c < 0x7F) {
    out += static_cast<char>(c);
  } else {
    const char b[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 0xF]};
    out.append(b, 4);
  }
  out += '\'';
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
