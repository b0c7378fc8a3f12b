// The answer's JSON writer (serve/sqs/json_text.hpp) writes exactly what
// nlohmann's dump(-1, ' ', false, replace) wrote before it, for every kind of
// value an answer holds and for every byte a string may hold.
#include "serve/sqs/json_text.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace spool::serve::sqs {
namespace {

using nlohmann::json;

std::string dumped(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

TEST(sqs_json_text, every_single_byte_string_is_written_as_nlohmann_writes_it) {
  for (int c = 0; c < 256; ++c) {
    const json v = std::string(1, static_cast<char>(c)) + "x";
    EXPECT_EQ(to_json_text(v), dumped(v)) << "byte " << c;
  }
}

TEST(sqs_json_text, utf8_escapes_and_invalid_bytes_match_nlohmann) {
  const std::vector<std::string> strings{
      "",
      "plain ascii body",
      "quote \" backslash \\ slash / tab \t newline \n cr \r bs \b ff \f nul " + std::string(1, '\0') +
          " del \x7f",
      "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 end",  // é, €, an emoji
      "bad \xff byte",                                   // not UTF-8: U+FFFD, as before
      "cut \xe2\x82",                                    // a sequence cut short
      "overlong \xc0\xaf",                               // an overlong form
      "surrogate \xed\xa0\x80",                          // an encoded surrogate
      std::string(5000, 'x') + "\"" + std::string(300, 'y'),
  };
  for (const auto& s : strings) {
    const json v = s;
    EXPECT_EQ(to_json_text(v), dumped(v)) << s;
  }
}

TEST(sqs_json_text, an_answer_with_every_kind_of_value_matches_nlohmann) {
  const json v = {
      {"Messages", json::array({{{"MessageId", "m-1"},
                                 {"ReceiptHandle", "r:1"},
                                 {"MD5OfBody", "d41d8cd98f00b204e9800998ecf8427e"},
                                 {"Body", "{\"k\":\"v\\n\"}"},
                                 {"Attributes",
                                  {{"ApproximateReceiveCount", "1"}, {"SentTimestamp", "1733600000000"}}}}})},
      {"Successful", json::array()},
      {"Failed", json::array({{{"Id", "b\xff"}, {"SenderFault", true}, {"Code", "X"}}})},
      {"Count", 42},
      {"Negative", -7},
      {"Unsigned", std::uint64_t{18446744073709551615U}},
      {"Ratio", 0.25},
      {"Nothing", nullptr},
      {"Off", false},
      {"Empty", json::object()},
      {"k\"ey\n", "a key that needs escapes"},
  };
  EXPECT_EQ(to_json_text(v), dumped(v));
}

}  // namespace
}  // namespace spool::serve::sqs
