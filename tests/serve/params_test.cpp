// SQS's rule for message text (serve/sqs/params.hpp): valid UTF-8 of #x9,
// #xA, #xD, #x20-#xD7FF, #xE000-#xFFFD and #x10000-#x10FFFF only, checked at
// every edge of those ranges.
#include "serve/sqs/params.hpp"

#include <gtest/gtest.h>

#include <string>

namespace spool::serve::sqs {
namespace {

// The UTF-8 of code point cp (no validation: surrogates are encoded too).
std::string utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

TEST(sqs_message_text, allows_exactly_the_code_points_sqs_allows) {
  for (char32_t cp :
       {0x9, 0xA, 0xD, 0x20, 0x7E, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0x10000, 0x10FFFF}) {
    EXPECT_TRUE(valid_message_text("a" + utf8(cp) + "z")) << std::hex << static_cast<unsigned>(cp);
  }
  for (char32_t cp : {0x0, 0x1, 0x8, 0xB, 0xC, 0xE, 0x1F, 0xD800, 0xDFFF, 0xFFFE, 0xFFFF}) {
    EXPECT_FALSE(valid_message_text("a" + utf8(cp) + "z")) << std::hex << static_cast<unsigned>(cp);
  }
  EXPECT_TRUE(valid_message_text(""));
  EXPECT_TRUE(valid_message_text("{\"order\": 42, \"note\": \"h\xC3\xA9llo \xF0\x9F\x98\x80\"}\r\n"));
}

TEST(sqs_message_text, refuses_ill_formed_utf8) {
  for (const std::string bad : {"\x80", "\xC3", "\xC3(", "\xC0\xAF", "\xE0\x9F\xBF", "\xF4\x90\x80\x80",
                                "\xF5\x80\x80\x80", "\xFF", "ok \xE2\x82"}) {
    EXPECT_FALSE(valid_message_text(bad)) << bad;
  }
}

}  // namespace
}  // namespace spool::serve::sqs
