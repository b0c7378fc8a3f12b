// binary_text_array: the text[] parameters of batch statements go in
// PostgreSQL's binary array format (issue 13: nothing to quote, nothing for
// the server to parse back). They must reach the server exactly as a text
// literal would, and refuse what a text parameter refuses, with its reasons.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/postgres/arrays.hpp"
#include "engine/postgres/connection.hpp"
#include "spool/error.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using pg::detail::intent;

std::vector<std::string> round_trip(pg::detail::connection& c, const std::vector<const std::string*>& values,
                                    bool binary) {
  const std::string array =
      binary ? pg::detail::binary_text_array(values, c.client_utf8()) : pg::detail::text_array(values);
  const auto rows = c.query(
      "SELECT coalesce(v, '<null>') || '|' || n FROM unnest($1::text[]) WITH ORDINALITY AS a(v, n) "
      "ORDER BY n",
      {array}, intent::read, {}, binary ? 0b1U : 0U);
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(*r.at(0));
  return out;
}

TEST(binary_text_array,
     carries_nulls_empty_strings_quotes_backslashes_and_multibyte_text_as_the_literal_does) {
  const auto uri = make_pg_database("binary_array");
  pg::detail::connection c(uri, "test", 5);
  const std::string empty, quoted = R"({"a":"b\"c"})", backslash = "a\\b\\\\", braces = "{x,y}",
                           multibyte = "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80", spaces = "  padded  ",
                           null_word = "NULL";
  const std::vector<const std::string*> values = {&empty,  &quoted,    nullptr, &backslash,
                                                  &braces, &multibyte, &spaces, &null_word};
  const auto by_text = round_trip(c, values, false);
  const auto by_binary = round_trip(c, values, true);
  ASSERT_EQ(by_binary.size(), values.size());
  EXPECT_EQ(by_binary, by_text);
  EXPECT_EQ(by_binary.at(2), "<null>|3");
  EXPECT_EQ(by_binary.at(7), "NULL|8") << "the word NULL is a value, not a null";
  EXPECT_EQ(by_binary.at(5), multibyte + "|6");
  // An empty array is an empty array, not a NULL one.
  EXPECT_TRUE(round_trip(c, {}, true).empty());
  EXPECT_EQ(*c.query("SELECT cardinality($1::text[])", {pg::detail::binary_text_array({}, true)},
                     intent::read, {}, 0b1U)
                 .at(0)
                 .at(0),
            "0");
}

TEST(binary_text_array,
     refuses_a_nul_byte_or_ill_formed_utf8_as_a_text_parameter_does_before_anything_is_sent) {
  const std::string nul("a\0b", 3), bad = "h\xC3llo", fine = "fine";
  try {
    (void)pg::detail::binary_text_array({&fine, &nul}, true);
    ADD_FAILURE() << "a NUL byte was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_EQ(e.reason(), "nul_in_text");
    EXPECT_NE(std::string(e.what()).find("element 1"), std::string::npos) << e.what();
  }
  try {
    (void)pg::detail::binary_text_array({&bad}, true);
    ADD_FAILURE() << "ill-formed UTF-8 was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_EQ(e.reason(), "invalid_encoding");
  }
  // With another client_encoding the bytes are the server's to convert.
  EXPECT_NO_THROW((void)pg::detail::binary_text_array({&bad}, false));
}

TEST(binary_text_array, a_parameter_marked_binary_that_is_not_a_byte_string_is_refused) {
  const auto uri = make_pg_database("binary_array_mark");
  pg::detail::connection c(uri, "test", 5);
  EXPECT_THROW((void)c.query("SELECT $1::bigint", {std::int64_t{1}}, intent::read, {}, 0b1U), error);
  EXPECT_EQ(*c.query("SELECT 1", {}, intent::read).at(0).at(0), "1") << "the connection stays usable";
}

}  // namespace
}  // namespace spool::test
