// The one base64 codec (src/common/base64.hpp) behind the outbox's canonical
// JSON payloads and the outbox's and the op queue's cursors.
#include "common/text/base64.hpp"

#include <gtest/gtest.h>

#include <string>

namespace spool::detail {
namespace {

std::string every_byte() {
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes += static_cast<char>(b);
  return bytes;
}

TEST(base64, the_rfc_4648_test_vectors_encode_with_padding) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(base64, the_rfc_4648_test_vectors_decode_back) {
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_EQ(base64_decode("Zg=="), "f");
  EXPECT_EQ(base64_decode("Zm8="), "fo");
  EXPECT_EQ(base64_decode("Zm9v"), "foo");
  EXPECT_EQ(base64_decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64_decode("Zm9vYmE="), "fooba");
  EXPECT_EQ(base64_decode("Zm9vYmFy"), "foobar");
}

TEST(base64, every_byte_value_survives_a_round_trip_at_every_length) {
  const std::string bytes = every_byte();
  for (std::size_t n = 0; n <= bytes.size(); ++n) {
    const std::string in = bytes.substr(bytes.size() - n);
    EXPECT_EQ(base64_decode(base64_encode(in)), in) << n << " bytes";
    EXPECT_EQ(base64url_decode(base64url_encode(in)), in) << n << " bytes";
  }
}

TEST(base64, the_standard_alphabet_uses_plus_and_slash_and_the_url_safe_one_dash_and_underscore) {
  const std::string bytes = "\xFB\xFF\xBF";
  EXPECT_EQ(base64_encode(bytes), "+/+/");
  EXPECT_EQ(base64url_encode(bytes), "-_-_");
  EXPECT_EQ(base64_decode("+/+/"), bytes);
  EXPECT_EQ(base64url_decode("-_-_"), bytes);
  EXPECT_EQ(base64_decode("-_-_"), std::nullopt);
  EXPECT_EQ(base64url_decode("+/+/"), std::nullopt);
}

TEST(base64, url_safe_text_carries_no_padding) {
  EXPECT_EQ(base64url_encode("f"), "Zg");
  EXPECT_EQ(base64url_encode("fo"), "Zm8");
  EXPECT_EQ(base64url_encode("foo"), "Zm9v");
  EXPECT_EQ(base64url_decode("Zg"), "f");
  EXPECT_EQ(base64url_decode("Zm8"), "fo");
  EXPECT_EQ(base64url_decode(""), "");
}

TEST(base64, standard_text_must_be_padded_to_a_multiple_of_four) {
  EXPECT_EQ(base64_decode("Zg"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm8"), std::nullopt);
  EXPECT_EQ(base64_decode("Zg="), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9vY"), std::nullopt);
}

TEST(base64, padding_is_only_one_or_two_trailing_equals_signs) {
  EXPECT_EQ(base64_decode("Z==="), std::nullopt);
  EXPECT_EQ(base64_decode("===="), std::nullopt);
  EXPECT_EQ(base64_decode("Zg==Zg=="), std::nullopt);  // padding in the middle
  EXPECT_EQ(base64_decode("Z=g="), std::nullopt);
  EXPECT_EQ(base64url_decode("Zg=="),
            std::nullopt);  // the URL-safe form has none
}

TEST(base64, characters_outside_the_alphabet_are_refused) {
  EXPECT_EQ(base64_decode("Zm9v YmFy"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9v\nYmFy"), std::nullopt);
  EXPECT_EQ(base64_decode("Zm9*"), std::nullopt);
  EXPECT_EQ(base64_decode(std::string("Zm9\0", 4)), std::nullopt);
  EXPECT_EQ(base64url_decode("Zm9.YmFy"), std::nullopt);
  EXPECT_EQ(base64url_decode("Zm9v\xC3\xA9"), std::nullopt);
}

TEST(base64, a_lone_character_after_the_last_group_of_four_is_no_whole_byte) {
  EXPECT_EQ(base64url_decode("Z"), std::nullopt);
  EXPECT_EQ(base64url_decode("Zm9vY"), std::nullopt);
}

TEST(base64, bits_left_over_after_the_last_whole_byte_are_ignored) {
  // "Zh==" differs from "Zg==" only in the four bits past the byte.
  EXPECT_EQ(base64_decode("Zh=="), "f");
  EXPECT_EQ(base64url_decode("Zh"), "f");
}

}  // namespace
}  // namespace spool::detail
