// A single-pass JSON scanner: one value of any type, strings decoded, re-encoded or only validated, numbers
// checked as JSON numbers, errors worded as Go's encoding/json words them. The message codec's decoder and
// encoder (src/mq/codec, message-queue.md §3.2) and the server's request parser (serve/sqs/json_parse.cpp)
// use it. Thread safety: one thread per scanner; the free functions are pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "common/text/json_string.hpp"
#include "common/text/utf8.hpp"

// The scanner and its character helpers live in json_lex, so that generic names (is_digit, hex_value) stay
// out of spool::detail, which every layer shares; the scanner itself is exported below.
namespace spool::detail::json_lex {

inline constexpr std::size_t kMaxDepth = 10000;  // Go's encoding/json limit; the payload object is level 1

// JSON's two-character escapes: the letter after the backslash and the character it stands for.
inline constexpr char kShortEscapes[][2] = {{'"', '"'},  {'\\', '\\'}, {'b', '\b'}, {'f', '\f'},
                                            {'n', '\n'}, {'r', '\r'},  {'t', '\t'}};

inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
// The value of one hex digit, or -1.
inline int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
// Length of the well-formed UTF-8 sequence starting at p (1 for ASCII), or 0 (utf8.hpp).
inline std::size_t utf8_seq_len(const char* p, const char* end) noexcept {
  return utf8_sequence(std::string_view(p, static_cast<std::size_t>(end - p)), 0);
}
// Appends one byte of a text for an error message: printable ASCII as is, anything else as \xNN, quoted.
void append_quoted_char(std::string& out, unsigned char c);

enum class str_mode { decode, json, skip };  // into raw text / re-encoded as a JSON string / validate only

// A single-pass JSON scanner over one buffer. Errors set `error` (rule, offset, at most one payload byte) and
// return false; nothing recurses, so depth is bounded only by kMaxDepth.
class json_scanner {
 public:
  // strict_utf8: a byte that starts no UTF-8 sequence is an error; strict_surrogates: so is an unpaired
  // surrogate escape (JSON's grammar allows one; nlohmann refuses it). Otherwise each becomes U+FFFD, as Go
  // decodes them.
  json_scanner(std::string_view in, bool strict_utf8, bool strict_surrogates = false)
      : begin_(in.data()),
        p_(begin_),
        end_(begin_ + in.size()),
        strict_utf8_(strict_utf8),
        strict_surrogates_(strict_surrogates) {}

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
        if (json_plain_ascii[c]) {
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
        if constexpr (M != str_mode::skip) dst->append(utf8_replacement);
        ++p_;
      }
    }
  }

  // A number at p_, under JSON's grammar; its text is appended verbatim. Requires p_ < end (skip_ws_more);
  // any byte there but '-' or a digit fails.
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

  // true, false or null at p_. Requires p_ < end and *p_ one of 't', 'f', 'n' (the word it checks).
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
      if (cp >= 0xD800 && cp < 0xE000) {
        cp = join_surrogate(cp);
        if (cp == 0xFFFD && strict_surrogates_) return fail("unpaired surrogate escape in string");
      }
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
        append_json_escape(*dst, static_cast<unsigned char>(cp));
        return true;
      }
    }
    if constexpr (M != str_mode::skip) append_utf8(*dst, static_cast<char32_t>(cp));
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

  const char* begin_;
  const char* p_;
  const char* end_;
  bool strict_utf8_;
  bool strict_surrogates_;
  std::string stack_;  // the closing bracket of each open container
};

}  // namespace spool::detail::json_lex

namespace spool::detail {
using json_lex::json_scanner;
using json_lex::str_mode;
}  // namespace spool::detail
