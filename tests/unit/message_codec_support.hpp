// Helpers of the message codec tests (message_codec_test.cpp,
// message_encode_test.cpp): decoding with expectations, an independent UTF-8
// validator and a message with every field set.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "spool/mq/message.hpp"

namespace spool::mq::codec_test {

using namespace std::string_literals;

inline const std::string kFffd = "\xEF\xBF\xBD";    // U+FFFD REPLACEMENT CHARACTER
inline const std::string kLongS = "\xC5\xBF";       // U+017F LATIN SMALL LETTER LONG S
inline const std::string kKelvin = "\xE2\x84\xAA";  // U+212A KELVIN SIGN

// A payload as shown in failure messages: deep-nesting payloads are long.
inline std::string shown(std::string_view payload) {
  return payload.size() <= 120 ? std::string(payload) : std::string(payload.substr(0, 120)) + "...";
}

// An independent UTF-8 validator for the checks below.
inline bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp < 0xE000)) {
      return false;
    }
    i += n;
  }
  return true;
}

inline std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

inline message decoded(std::string_view payload) {
  decode_result r = decode(payload);
  EXPECT_TRUE(r.ok()) << "payload " << shown(payload) << " failed: " << r.error;
  EXPECT_EQ(r.ok(), r.error.empty());
  return r.value.value_or(message{});
}

inline std::string poison_reason(std::string_view payload) {
  decode_result r = decode(payload);
  EXPECT_FALSE(r.ok()) << "payload " << shown(payload) << " was accepted";
  EXPECT_FALSE(r.error.empty());
  return r.error;
}

inline message full_message() {
  message m;
  m.id = "msg-1";
  m.pool_code = "POOL";
  m.auth_token = "tok";
  m.signing_secret = "sec";
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.test/hook?a=1&b=2";
  m.message_group_id = "grp";
  m.high_priority = true;
  m.dispatch_mode = "BLOCK_ON_ERROR";
  return m;
}

}  // namespace spool::mq::codec_test
