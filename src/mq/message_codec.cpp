// spool::mq message codec (message-queue.md §3): an iterative, hand-written JSON scanner for the lenient
// legacy decoding rule (§3.2), the encoder (§3.1), strict validation (§3.3) and UTF-8-safe truncation (§3.4).
//
// Decisions where the spec leaves room (also pinned by tests/unit/message_codec_test.cpp):
// - A syntax error anywhere wins over a type error (`{"id":5,` is a syntax error), as in Go, which checks the
//   whole text before decoding; of several type errors the first is reported.
// - Invalid UTF-8 becomes one U+FFFD per byte that starts no valid sequence, and an unpaired surrogate escape
//   one U+FFFD, as Go's decoder does.
// - A repeated unknown key keeps one extra member, at the position of its first occurrence, with the last
//   value, as a JSON object would. Unknown keys differing only in case are different members.
// - Extra values are re-emitted compactly: numbers verbatim, strings re-escaped minimally (valid UTF-8 kept
//   raw, so "\u00e9" becomes "é").
// - encode() trims JSON whitespace around an extra value and rejects a value nested deeper than the payload's
//   limit allows (the payload object is level 1), since it would not decode. It does not reject duplicate
//   extra keys (still valid JSON; the decoder keeps the last).
// - strict_violation() cuts a quoted value to 64 bytes, then escapes `"`, `\` and control characters and
//   replaces invalid UTF-8, so the reason is always storable text.
#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/utf8.hpp"
#include "spool/error.hpp"
#include "spool/mq/message.hpp"

namespace spool::mq {
namespace {

constexpr std::size_t kMaxDepth = 10000;  // Go's encoding/json limit; the payload object is level 1
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr char kHex[] = "0123456789abcdef";

// The nine known keys, in wire order; kUnknown for any other key.
enum field : int {
  kId,
  kPoolCode,
  kAuthToken,
  kSigningSecret,
  kMediationType,
  kMediationTarget,
  kMessageGroupId,
  kHighPriority,
  kDispatchMode,
  kUnknown
};
constexpr std::array<std::string_view, kUnknown> kFieldNames = {"id",
                                                                "poolCode",
                                                                "authToken",
                                                                "signingSecret",
                                                                "mediationType",
                                                                "mediationTarget",
                                                                "messageGroupId",
                                                                "highPriority",
                                                                "dispatchMode"};

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

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

// JSON's two-character escapes: the letter after the backslash and the character it stands for.
constexpr char kShortEscapes[][2] = {{'"', '"'},  {'\\', '\\'}, {'b', '\b'}, {'f', '\f'},
                                     {'n', '\n'}, {'r', '\r'},  {'t', '\t'}};

// The escape for an ASCII character that may not appear raw in a JSON string (`"`, `\`, < 0x20).
void append_escape(std::string& out, unsigned char c) {
  for (const auto& e : kShortEscapes) {
    if (static_cast<unsigned char>(e[1]) == c) {
      out += '\\';
      out += e[0];
      return;
    }
  }
  const char b[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
  out.append(b, 6);
}

// Appends s as a quoted JSON string. Invalid UTF-8 makes it return false (replace = false) or becomes U+FFFD.
bool append_json_string(std::string& out, std::string_view s, bool replace) {
  out.push_back('"');
  const char* p = s.data();
  const char* const end = p + s.size();
  const char* run = p;
  while (p < end) {
    const auto c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++p;
      continue;
    }
    if (c >= 0x80) {
      if (const std::size_t n = utf8_seq_len(p, end)) {
        p += n;
        continue;
      }
      if (!replace) return false;
      out.append(run, p);
      out += kReplacement;
    } else {
      out.append(run, p);
      append_escape(out, c);
    }
    run = ++p;
  }
  out.append(run, p);
  out.push_back('"');
  return true;
}

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

enum class str_mode { decode, json, skip };  // into raw text / re-encoded as a JSON string / validate only

// A single-pass JSON scanner over one buffer. Errors set `error` (rule, offset, at most one payload byte) and
// return false; nothing recurses, so depth is bounded only by kMaxDepth.
class scanner {
 public:
  scanner(std::string_view in, bool strict_utf8)
      : begin_(in.data()), p_(begin_), end_(begin_ + in.size()), strict_utf8_(strict_utf8) {}

  std::string error;

  std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
  bool at_end() const { return p_ == end_; }
  char peek() const { return *p_; }
  bool advance() {
    ++p_;
    return true;
  }
  void skip_ws() {
    while (p_ < end_ && is_ws(*p_)) ++p_;
  }
  // Skips whitespace; false (with the truncation error) when the input ends.
  bool skip_ws_more() {
    skip_ws();
    return p_ < end_ || fail_eof();
  }

  bool fail_eof() { return fail("unexpected end of JSON input"); }
  bool fail(std::string_view rule) {
    error.assign(rule);
    error += " at offset ";
    error += std::to_string(offset());
    return false;
  }
  bool fail_char(std::string_view context) {
    error = "invalid character ";
    append_quoted_char(error, static_cast<unsigned char>(*p_));
    error += ' ';
    error += context;
    error += " at offset ";
    error += std::to_string(offset());
    return false;
  }

  // One complete value of any type, with `depth` containers already open around it. Appends its compact JSON
  // text to out, or only validates it when out is null.
  bool value(std::string* out, std::size_t depth) {
    stack_.clear();
    for (;;) {
      if (!skip_ws_more()) return false;
      const char c = *p_;
      if (c == '{' || c == '[') {
        if (depth + stack_.size() >= kMaxDepth) return fail("exceeded max nesting depth 10000");
        const char close = c == '{' ? '}' : ']';
        stack_.push_back(close);
        put(out, c);
        ++p_;
        if (!skip_ws_more()) return false;
        if (*p_ != close) {
          if (c == '{' && !key(out)) return false;
          continue;  // parse the first element
        }
        put(out, close);
        ++p_;
        stack_.pop_back();
      } else if (!scalar(out)) {
        return false;
      }
      // A value is complete: close containers until one expects another element.
      for (;;) {
        if (stack_.empty()) return true;
        if (!skip_ws_more()) return false;
        const char close = stack_.back();
        if (*p_ == ',') {
          put(out, ',');
          ++p_;
          if (close == '}' && !(skip_ws_more() && key(out))) return false;
          break;
        }
        if (*p_ != close) {
          return fail_char(close == '}' ? "after object key:value pair" : "after array element");
        }
        put(out, close);
        ++p_;
        stack_.pop_back();
      }
    }
  }

  // A string, number or literal at p_.
  bool scalar(std::string* out) {
    const char c = *p_;
    if (c == '"') return out ? string<str_mode::json>(out) : string<str_mode::skip>(nullptr);
    if (c == 't' || c == 'f' || c == 'n') return literal(out);
    if (c == '-' || is_digit(c)) return number(out);
    return fail_char("looking for beginning of value");
  }

  // A string at p_ (the opening quote): decoded into dst, re-encoded onto dst, or validated.
  template <str_mode M>
  bool string(std::string* dst) {
    ++p_;
    if constexpr (M == str_mode::json) dst->push_back('"');
    for (;;) {
      const char* run = p_;
      while (p_ < end_) {
        const auto c = static_cast<unsigned char>(*p_);
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
          ++p_;
        } else if (const std::size_t n = c >= 0x80 ? utf8_seq_len(p_, end_) : 0) {
          p_ += n;
        } else {
          break;
        }
      }
      if constexpr (M != str_mode::skip) dst->append(run, p_);
      if (p_ == end_) return fail_eof();
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        if constexpr (M == str_mode::json) dst->push_back('"');
        return true;
      }
      if (c == '\\') {
        if (!escape<M>(dst)) return false;
      } else if (c < 0x20) {
        return fail_char("in string literal");
      } else {  // a byte that starts no valid UTF-8 sequence
        if (strict_utf8_) return fail("invalid UTF-8 in string");
        if constexpr (M != str_mode::skip) dst->append(kReplacement);
        ++p_;
      }
    }
  }

 private:
  static void put(std::string* out, char c) {
    if (out) out->push_back(c);
  }

  // An object key at p_ (after whitespace) and its colon.
  bool key(std::string* out) {
    if (*p_ != '"') return fail_char("looking for beginning of object key string");
    if (!(out ? string<str_mode::json>(out) : string<str_mode::skip>(nullptr))) return false;
    if (!skip_ws_more()) return false;
    if (*p_ != ':') return fail_char("after object key");
    put(out, ':');
    ++p_;
    return true;
  }

  // An escape sequence at p_ (the backslash).
  template <str_mode M>
  bool escape(std::string* dst) {
    if (++p_ == end_) return fail_eof();
    std::uint32_t cp = 0;
    if (*p_ == 'u') {
      for (int i = 0; i < 4; ++i) {
        if (++p_ == end_) return fail_eof();
        const int h = hex_value(*p_);
        if (h < 0) return fail_char("in \\u hexadecimal character escape");
        cp = cp * 16 + static_cast<std::uint32_t>(h);
      }
      if (cp >= 0xD800 && cp < 0xE000) cp = join_surrogate(cp);
    } else if (*p_ == '/') {
      cp = '/';
    } else {
      const auto* e = std::find_if(std::begin(kShortEscapes), std::end(kShortEscapes),
                                   [c = *p_](const char(&pair)[2]) { return pair[0] == c; });
      if (e == std::end(kShortEscapes)) return fail_char("in string escape code");
      cp = static_cast<unsigned char>((*e)[1]);
    }
    ++p_;
    if constexpr (M == str_mode::json) {
      if (cp < 0x20 || cp == '"' || cp == '\\') {
        append_escape(*dst, static_cast<unsigned char>(cp));
        return true;
      }
    }
    if constexpr (M != str_mode::skip) append_utf8(*dst, cp);
    return true;
  }

  // The code point for surrogate escape cp, p_ on its last hex digit: a high surrogate joins a directly
  // following \u low surrogate escape (consumed); anything else is unpaired and becomes U+FFFD. A following
  // escape that is no low surrogate is only peeked at, and scanned on its own afterwards.
  std::uint32_t join_surrogate(std::uint32_t cp) {
    if (cp >= 0xDC00 || end_ - p_ < 7 || p_[1] != '\\' || p_[2] != 'u') return 0xFFFD;
    std::uint32_t lo = 0;
    for (int i = 3; i < 7; ++i) {
      const int h = hex_value(p_[i]);
      if (h < 0) return 0xFFFD;
      lo = lo * 16 + static_cast<std::uint32_t>(h);
    }
    if (lo < 0xDC00 || lo >= 0xE000) return 0xFFFD;
    p_ += 6;
    return 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }

  // A number at p_, under JSON's grammar; its text is appended verbatim.
  bool number(std::string* out) {
    const char* start = p_;
    if (*p_ == '-' && ++p_ == end_) return fail_eof();
    if (*p_ == '0') {
      ++p_;
    } else if (is_digit(*p_)) {
      while (p_ < end_ && is_digit(*p_)) ++p_;
    } else {
      return fail_char("in numeric literal");
    }
    if (p_ < end_ && *p_ == '.') {
      if (++p_ == end_) return fail_eof();
      if (!is_digit(*p_)) return fail_char("after decimal point in numeric literal");
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      if (++p_ == end_) return fail_eof();
      if ((*p_ == '+' || *p_ == '-') && ++p_ == end_) return fail_eof();
      if (!is_digit(*p_)) return fail_char("in exponent of numeric literal");
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (out) out->append(start, p_);
    return true;
  }

  // true, false or null at p_.
  bool literal(std::string* out) {
    const std::string_view word = *p_ == 't' ? "true" : *p_ == 'f' ? "false" : "null";
    for (std::size_t i = 1; i < word.size(); ++i) {
      if (++p_ == end_) return fail_eof();
      if (*p_ != word[i]) {
        return fail_char(std::string("in literal ").append(word).append(" (expecting '") + word[i] + "')");
      }
    }
    ++p_;
    if (out) out->append(word);
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  bool strict_utf8_;
  std::string stack_;  // the closing bracket of each open container
};

// Decodes the top-level object's members into a message (§3.2).
class decoder : public scanner {
 public:
  explicit decoder(std::string_view payload) : scanner(payload, false) {}

  std::string type_error;  // the first wrong-type value; a later syntax error takes precedence

  // The object at p_ (the opening brace).
  bool object(message& m) {
    if (!(advance() && skip_ws_more())) return false;
    if (peek() == '}') return advance();
    for (;;) {
      if (peek() != '"') return fail_char("looking for beginning of object key string");
      key_.clear();
      if (!string<str_mode::decode>(&key_) || !skip_ws_more()) return false;
      if (peek() != ':') return fail_char("after object key");
      if (!(advance() && skip_ws_more() && member(m, match_field(key_)) && skip_ws_more())) return false;
      if (peek() == '}') return advance();
      if (peek() != ',') return fail_char("after object key:value pair");
      if (!(advance() && skip_ws_more())) return false;
    }
  }

  void note_type_error(const char* kind, std::string_view target) {
    if (!type_error.empty()) return;
    type_error = std::string("cannot unmarshal ") + kind + " into " + std::string(target) + " at offset " +
                 std::to_string(offset());
  }

 private:
  // The value of one member, at p_.
  bool member(message& m, field f) {
    const char c = peek();
    if (f == kUnknown) {
      extra_member& e = extra_slot(m.extra);
      e.json.clear();
      return value(&e.json, 1);
    }
    if (c == 'n') {  // null: optionals become unset, other fields keep their value
      if (f == kAuthToken) m.auth_token.reset();
      if (f == kSigningSecret) m.signing_secret.reset();
      if (f == kMessageGroupId) m.message_group_id.reset();
      return value(nullptr, 1);
    }
    if (f == kHighPriority && (c == 't' || c == 'f')) {
      m.high_priority = c == 't';
      return value(nullptr, 1);
    }
    if (f != kHighPriority && c == '"') {
      std::string* dst = string_field(m, f);
      dst->clear();
      return string<str_mode::decode>(dst);
    }
    if (const char* kind = json_kind(c)) {
      note_type_error(kind, std::string("field ")
                                .append(kFieldNames[f])
                                .append(f == kHighPriority ? " of type bool" : " of type string"));
    }
    return value(nullptr, 1);  // skips the value, or reports the syntax error
  }

  static std::string* string_field(message& m, field f) {
    if (f == kAuthToken) return &m.auth_token.emplace();
    if (f == kSigningSecret) return &m.signing_secret.emplace();
    if (f == kMessageGroupId) return &m.message_group_id.emplace();
    std::string* const plain[] = {&m.id,   &m.pool_code,      nullptr,
                                  nullptr, &m.mediation_type, &m.mediation_target,
                                  nullptr, nullptr,           &m.dispatch_mode};
    return plain[f];
  }

  // The extra member for key_: the existing one for a repeated key, else a new one at the end. Past a few
  // members a hash index keeps a payload of many unknown keys linear.
  extra_member& extra_slot(std::vector<extra_member>& extra) {
    constexpr std::size_t kLinear = 32;
    if (extra.size() < kLinear) {
      for (extra_member& e : extra) {
        if (e.key == key_) return e;
      }
    } else {
      if (index_.empty()) {
        for (std::size_t i = 0; i < extra.size(); ++i) index_.emplace(extra[i].key, i);
      }
      const auto [it, inserted] = index_.emplace(key_, extra.size());
      if (!inserted) return extra[it->second];
    }
    return extra.emplace_back(extra_member{key_, {}});
  }

  std::string key_;  // the current key, decoded; reused across members
  std::unordered_map<std::string, std::size_t> index_;
};

// Appends a value for a strict-mode reason: cut to 64 bytes, quoted, escaped, invalid UTF-8 replaced.
void append_quoted_value(std::string& out, std::string_view v) {
  append_json_string(out, truncate_utf8(v, 64), true);
}

// True when the scanner's whole input is one JSON value (whitespace around it allowed) that may sit inside
// the payload object without exceeding the depth limit.
bool one_value(scanner& s) {
  if (!s.skip_ws_more() || !s.value(nullptr, 1)) return false;
  s.skip_ws();
  return s.at_end() || s.fail_char("after value");
}

[[noreturn]] void throw_invalid(const std::string& text) { throw spool::error(errc::invalid_argument, text); }

void put_field(std::string& out, field f, std::string_view value) {
  out += f == kId ? "\"" : ",\"";
  out += kFieldNames[f];
  out += "\":";
  if (!append_json_string(out, value, false)) {
    throw_invalid(std::string("encode: field ").append(kFieldNames[f]).append(" is not valid UTF-8"));
  }
}

}  // namespace

decode_result decode(std::string_view payload) {
  decoder d(payload);
  message m;
  bool ok = true;
  if (payload.substr(0, 3) == "\xEF\xBB\xBF") {
    ok = d.fail("byte-order mark not allowed");
  } else if (!d.skip_ws_more()) {
    ok = false;
  } else if (d.peek() == '{') {
    ok = d.object(m);
  } else {
    if (d.peek() != 'n') {  // top-level null is a no-op: the all-zero message
      if (const char* kind = json_kind(d.peek())) d.note_type_error(kind, "message of type object");
    }
    ok = d.value(nullptr, 0);
  }
  if (ok) {
    d.skip_ws();
    if (!d.at_end()) ok = d.fail_char("after top-level value");
  }
  decode_result r;
  if (!ok) {
    r.error = std::move(d.error);
  } else if (!d.type_error.empty()) {
    r.error = std::move(d.type_error);
  } else {
    r.value = std::move(m);
  }
  return r;
}

std::string encode(const message& m) {
  std::size_t size = 96 + m.id.size() + m.pool_code.size() + m.mediation_type.size() +
                     m.mediation_target.size() + m.dispatch_mode.size();
  for (const auto* o : {&m.auth_token, &m.signing_secret, &m.message_group_id}) {
    if (o->has_value()) size += 20 + (*o)->size();
  }
  for (const extra_member& e : m.extra) size += e.key.size() + e.json.size() + 4;
  std::string out;
  out.reserve(size + size / 16);
  out += '{';
  put_field(out, kId, m.id);
  if (!m.pool_code.empty()) put_field(out, kPoolCode, m.pool_code);
  if (m.auth_token) put_field(out, kAuthToken, *m.auth_token);
  if (m.signing_secret) put_field(out, kSigningSecret, *m.signing_secret);
  put_field(out, kMediationType, m.mediation_type);
  put_field(out, kMediationTarget, m.mediation_target);
  if (m.message_group_id) put_field(out, kMessageGroupId, *m.message_group_id);
  if (m.high_priority) out += ",\"highPriority\":true";
  if (!m.dispatch_mode.empty()) put_field(out, kDispatchMode, m.dispatch_mode);
  for (std::size_t i = 0; i < m.extra.size(); ++i) {
    const extra_member& e = m.extra[i];
    out += ',';
    if (!append_json_string(out, e.key, false)) {
      throw_invalid("encode: extra key #" + std::to_string(i) + " is not valid UTF-8");
    }
    if (const field f = match_field(e.key); f != kUnknown) {
      std::string text = "encode: extra key ";
      append_quoted_value(text, e.key);
      throw_invalid(text.append(" matches the known key ").append(kFieldNames[f]));
    }
    scanner s(e.json, true);
    if (!one_value(s)) {
      std::string text = "encode: extra member ";
      append_quoted_value(text, e.key);
      throw_invalid(text.append(" is not one valid JSON value: ").append(s.error));
    }
    const std::size_t first = e.json.find_first_not_of(" \t\n\r");
    const std::size_t last = e.json.find_last_not_of(" \t\n\r");
    out += ':';
    out.append(e.json, first, last + 1 - first);
  }
  out += '}';
  return out;
}

std::string strict_violation(const message& m, std::string_view row_id) {
  if (m.id.empty()) return "strict: empty id";
  if (m.mediation_target.empty()) return "strict: empty mediationTarget";
  std::string text;
  if (m.mediation_type != "HTTP") {
    text = "strict: unknown mediationType ";
    append_quoted_value(text, m.mediation_type);
  } else if (m.id != row_id) {
    text = "strict: payload id ";
    append_quoted_value(text, m.id);
    text += " differs from row id ";
    append_quoted_value(text, row_id);
  }
  return text;
}

std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
  return spool::detail::utf8_truncate(text, max_bytes);
}

}  // namespace spool::mq
