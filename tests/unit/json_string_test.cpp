// The one JSON string writer (src/common/text/json_string.hpp) that the
// message codec and the server's answers share.
#include "common/text/json_string.hpp"

#include <gtest/gtest.h>

#include <string>

namespace spool::detail {
namespace {

std::string quoted(std::string_view s, bool replace) {
  std::string out = "x";  // the writer appends; what is already there stays
  if (!append_json_string(out, s, replace)) return "<invalid>";
  return out;
}

TEST(json_string, plain_text_and_utf8_are_copied_between_quotes) {
  EXPECT_EQ(quoted("", false), "x\"\"");
  EXPECT_EQ(quoted("hello world", false), "x\"hello world\"");
  EXPECT_EQ(quoted("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", false),
            "x\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  EXPECT_EQ(quoted("\x7F", false), "x\"\x7F\"");  // DEL needs no escape in JSON
}

TEST(json_string, quotes_backslashes_and_control_characters_are_escaped_in_their_shortest_form) {
  EXPECT_EQ(quoted("a\"b\\c", false), "x\"a\\\"b\\\\c\"");
  EXPECT_EQ(quoted("\b\f\n\r\t", false), "x\"\\b\\f\\n\\r\\t\"");
  EXPECT_EQ(quoted(std::string_view("\0\x01\x1F", 3), false), "x\"\\u0000\\u0001\\u001f\"");
  const char* const expected[0x20] = {
      "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
      "\\b",     "\\t",     "\\n",     "\\u000b", "\\f",     "\\r",     "\\u000e", "\\u000f",
      "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
      "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f"};
  for (int c = 0; c < 0x20; ++c) {
    std::string out;
    append_json_escape(out, static_cast<unsigned char>(c));
    EXPECT_EQ(out, expected[c]) << c;
  }
}

TEST(json_string, ill_formed_utf8_is_refused_or_replaced_byte_by_byte) {
  EXPECT_EQ(quoted("a\xC3(", false), "<invalid>");
  EXPECT_EQ(quoted("a\x80z", false), "<invalid>");
  EXPECT_EQ(quoted("\xED\xA0\x80", false), "<invalid>");  // a surrogate
  EXPECT_EQ(quoted("a\x80z", true), "x\"a\xEF\xBF\xBDz\"");
  EXPECT_EQ(quoted("\xC0\xAF", true), "x\"\xEF\xBF\xBD\xEF\xBF\xBD\"");  // overlong: two bad bytes
  EXPECT_EQ(quoted("\xE2\x82"
                   "\n",
                   true),
            "x\"\xEF\xBF\xBD\xEF\xBF\xBD\\n\"");
}

}  // namespace
}  // namespace spool::detail
