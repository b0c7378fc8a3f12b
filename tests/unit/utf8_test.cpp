// The one UTF-8 toolkit (src/common/utf8.hpp) that the engines, the message
// codec, the op queue and the outbox share: what is well-formed, where a text
// may be cut, how ill-formed bytes are repaired.
#include "common/text/utf8.hpp"

#include <gtest/gtest.h>

#include <string>

namespace spool::detail {
namespace {

TEST(utf8, a_sequence_is_well_formed_only_without_overlongs_surrogates_or_code_points_above_u10ffff) {
  EXPECT_EQ(utf8_sequence("a", 0), 1u);
  EXPECT_EQ(utf8_sequence(std::string(1, '\0'), 0), 1u);  // NUL is a code point
  EXPECT_EQ(utf8_sequence("\xC3\xA9", 0), 2u);             // é
  EXPECT_EQ(utf8_sequence("\xE2\x82\xAC", 0), 3u);         // €
  EXPECT_EQ(utf8_sequence("\xF0\x9F\x98\x80", 0), 4u);     // 😀
  EXPECT_EQ(utf8_sequence("\xF4\x8F\xBF\xBF", 0), 4u);     // U+10FFFF
  EXPECT_EQ(utf8_sequence("\x80", 0), 0u);                 // stray continuation
  EXPECT_EQ(utf8_sequence("\xC0\xAF", 0), 0u);             // overlong '/'
  EXPECT_EQ(utf8_sequence("\xC1\xBF", 0), 0u);
  EXPECT_EQ(utf8_sequence("\xE0\x9F\xBF", 0), 0u);         // overlong three bytes
  EXPECT_EQ(utf8_sequence("\xED\xA0\x80", 0), 0u);         // surrogate U+D800
  EXPECT_EQ(utf8_sequence("\xF0\x8F\xBF\xBF", 0), 0u);     // overlong four bytes
  EXPECT_EQ(utf8_sequence("\xF4\x90\x80\x80", 0), 0u);     // U+110000
  EXPECT_EQ(utf8_sequence("\xF5\x80\x80\x80", 0), 0u);
  EXPECT_EQ(utf8_sequence("\xE2\x82", 0), 0u);             // cut short
  EXPECT_EQ(utf8_sequence("\xC3" "a", 0), 0u);             // no continuation
  EXPECT_EQ(utf8_sequence("x\xC3\xA9", 1), 2u);            // at an offset
}

TEST(utf8, code_points_decode_from_each_length) {
  EXPECT_EQ(utf8_code_point("a", 0, 1), U'a');
  EXPECT_EQ(utf8_code_point("\xC3\xA9", 0, 2), U'\u00E9');
  EXPECT_EQ(utf8_code_point("\xE2\x82\xAC", 0, 3), U'\u20AC');
  EXPECT_EQ(utf8_code_point("\xF0\x9F\x98\x80", 0, 4), U'\U0001F600');
  EXPECT_EQ(utf8_code_point("\xC2\x85", 0, 2), U'\u0085');  // a C1 control
}

TEST(utf8, a_text_is_well_formed_when_every_sequence_is) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("h\xC3\xA9llo \xE2\x82\xAC"));
  EXPECT_TRUE(is_utf8(std::string("a\0b", 3)));
  EXPECT_FALSE(is_utf8("h\xC3llo"));
  EXPECT_FALSE(is_utf8("\xED\xBF\xBF"));
}

TEST(utf8, long_ascii_runs_are_checked_to_the_last_byte_wherever_a_sequence_falls) {
  // The check skips eight ASCII bytes at a time: put a cut sequence, a whole
  // one straddling each eight-byte boundary and a stray byte at every place.
  for (std::size_t pos = 0; pos < 40; ++pos) {
    std::string s(40, 'a');
    s[pos] = '\xC3';
    EXPECT_FALSE(is_utf8(s)) << "a lead byte alone at " << pos;
    if (pos + 1 < s.size()) {
      s[pos + 1] = '\xA9';
      EXPECT_TRUE(is_utf8(s)) << "a whole sequence at " << pos;
    }
    std::string stray(40, 'a');
    stray[pos] = '\x80';
    EXPECT_FALSE(is_utf8(stray)) << "a stray continuation byte at " << pos;
  }
}

TEST(utf8, a_cut_drops_a_last_sequence_that_does_not_fit_and_keeps_stray_bytes) {
  EXPECT_EQ(utf8_truncate("abc", 3), "abc");
  EXPECT_EQ(utf8_truncate("abcd", 3), "abc");
  EXPECT_EQ(utf8_truncate("a\xE2\x82\xAC", 3), "a");        // € would be split
  EXPECT_EQ(utf8_truncate("a\xE2\x82\xAC", 4), "a\xE2\x82\xAC");
  EXPECT_EQ(utf8_truncate("\xF0\x9F\x98\x80z", 3), "");
  EXPECT_EQ(utf8_truncate("ab\x80\x80\x80\x80\x80", 5), "ab\x80\x80\x80");  // ill-formed: no sequence to protect
  EXPECT_EQ(utf8_truncate("", 0), "");
}

TEST(utf8, a_repair_replaces_each_ill_formed_byte_and_drops_nul_when_asked) {
  EXPECT_EQ(utf8_repair("ok \xC3\xA9", false), "ok \xC3\xA9");
  EXPECT_EQ(utf8_repair("a\xFF" "b", false), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_repair("\xE2\x82", false), "\xEF\xBF\xBD\xEF\xBF\xBD");  // one U+FFFD per byte
  EXPECT_EQ(utf8_repair(std::string("a\0b", 3), true), "ab");
  EXPECT_EQ(utf8_repair(std::string("a\0b", 3), false), std::string("a\0b", 3));
  EXPECT_TRUE(is_utf8(utf8_repair("\xC0\xAF\xED\xA0\x80\xF4\x90\x80\x80", false)));
}

}  // namespace
}  // namespace spool::detail
