// The request parser (serve/sqs/json_parse.hpp) gives the DOM that
// nlohmann::json::parse gives, number types included, and refuses what it
// refuses; checked case by case and against nlohmann over generated texts,
// valid and mutated.
#include "serve/sqs/json_parse.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace spool::serve::sqs {
namespace {

using nlohmann::json;

// Equal values of equal types all the way down (json's == takes 1 for 1.0).
bool same(const json& a, const json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
      if (i.key() != j.key() || !same(i.value(), j.value())) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_number_float() && std::signbit(a.get<double>()) != std::signbit(b.get<double>())) return false;
  return a == b;
}

std::optional<json> nlohmann_parse(std::string_view text) {
  try {
    return json::parse(text);
  } catch (const json::exception&) {  // parse_error, or out_of_range for a number overflow
    return std::nullopt;
  }
}

// Our parse and nlohmann's agree on text: the same value, or both refuse it.
::testing::AssertionResult agrees(std::string_view text) {
  const auto ours = parse_json(text);
  const auto theirs = nlohmann_parse(text);
  if (ours.has_value() != theirs.has_value()) {
    return ::testing::AssertionFailure()
           << (ours ? "accepted" : "refused") << " what nlohmann " << (theirs ? "accepts" : "refuses") << ": "
           << json(text).dump(-1, ' ', true, json::error_handler_t::replace);
  }
  if (ours && !same(*ours, *theirs)) {
    return ::testing::AssertionFailure() << ours->dump() << " != " << theirs->dump();
  }
  return ::testing::AssertionSuccess();
}

TEST(sqs_json_parse, an_sdk_request_reads_as_nlohmann_reads_it) {
  const std::string request =
      R"({"QueueUrl":"http://127.0.0.1:9324/000000000000/q","Entries":[)"
      R"({"Id":"0","MessageBody":"h\u00e9llo \"w\" \\ \/ \n \ud83d\ude00 \u20ac","DelaySeconds":5,)"
      R"("MessageAttributes":{"n":{"DataType":"Number","StringValue":"1.5"}}},)"
      R"({"Id":"1","MessageBody":"x","DelaySeconds":0}],"Empty":{},"None":[],"Flag":true,"Off":false,"Null":null})";
  EXPECT_TRUE(agrees(request));
  ASSERT_TRUE(parse_json(request));
  EXPECT_EQ((*parse_json(request))["Entries"][0]["MessageBody"],
            "h\xC3\xA9llo \"w\" \\ / \n \xF0\x9F\x98\x80 \xE2\x82\xAC");
}

TEST(sqs_json_parse, numbers_keep_nlohmanns_types_from_64_bits_to_doubles) {
  for (const char* n :
       {"0", "-0", "7", "-7", "18446744073709551615", "18446744073709551616", "-9223372036854775808",
        "-9223372036854775809", "1.5", "-1.5e3", "1E2", "0.0", "1e-400", "123456789012345678901234567890"}) {
    EXPECT_TRUE(agrees(n)) << n;
    EXPECT_TRUE(agrees(std::string("[") + n + "]")) << n;
  }
  EXPECT_TRUE((*parse_json("18446744073709551615")).is_number_unsigned());
  EXPECT_TRUE((*parse_json("-1")).is_number_integer());
  EXPECT_TRUE((*parse_json("18446744073709551616")).is_number_float());
  EXPECT_FALSE(parse_json("1E400"));  // nlohmann: number overflow
  EXPECT_FALSE(parse_json("-1e400"));
  for (const char* n :
       {"[1e400]", "[1e-400]", "[-1e-400]", "[-0.0]", "{\"a\":-0}", "[1.7976931348623157e308]"}) {
    EXPECT_TRUE(agrees(n)) << n;
  }
  EXPECT_TRUE(std::signbit((*parse_json("-0.0")).get<double>()));
}

TEST(sqs_json_parse, a_repeated_key_keeps_its_last_value) {
  EXPECT_TRUE(agrees(R"({"a":1,"b":2,"a":{"x":[3]}})"));
  EXPECT_TRUE(agrees(R"({"a":[1],"a":{}})"));
  EXPECT_TRUE(agrees(R"({"":1,"":[[],{}]})"));
  EXPECT_EQ(*parse_json(R"({"a":1,"a":"last"})"), json({{"a", "last"}}));
}

TEST(sqs_json_parse, refuses_what_nlohmann_refuses) {
  for (const std::string bad : {"",
                                " ",
                                "{",
                                "}",
                                "[",
                                "[1,]",
                                "{,}",
                                R"({"a" 1})",
                                R"({"a":})",
                                R"({"a":1,})",
                                "01",
                                "1.",
                                "-",
                                ".5",
                                "1e",
                                "+1",
                                "tru",
                                "nul",
                                "True",
                                R"("abc)",
                                R"("\x")",
                                R"("\u12")",
                                R"("\ud800")",
                                R"("\udc00")",
                                R"("\ud800\u0041")",
                                R"("\ud800\ud800")",
                                R"("\udbff")",
                                R"("\udc00\ud800")",
                                "\"a\tb\"",
                                "\"\x01\"",
                                "\"\xC3\"",
                                "\"\xC0\xAF\"",
                                "\"\xED\xA0\x80\"",
                                "\xEF\xBB{}",
                                "{} x",
                                "[1] [2]",
                                R"({"a":1}})",
                                "[1]]",
                                "{'a':1}",
                                "/* c */ {}",
                                "NaN",
                                "Infinity"}) {
    EXPECT_TRUE(agrees(bad)) << bad;
    EXPECT_FALSE(parse_json(bad)) << bad;
  }
}

TEST(sqs_json_parse, accepts_a_byte_order_mark_and_whitespace_around_every_token) {
  EXPECT_TRUE(agrees("\xEF\xBB\xBF{\"a\":1}"));
  EXPECT_TRUE(agrees(" \t\n\r{ \"a\" : [ 1 , { } , [ ] , \"s\" ] , \"b\" : null } \n"));
}

TEST(sqs_json_parse, refuses_a_nul_and_anything_after_it_which_nlohmann_ignores) {
  const std::string text = std::string("{\"a\":1}") + '\0' + "garbage";
  EXPECT_TRUE(nlohmann_parse(text));  // nlohmann stops at the NUL
  EXPECT_FALSE(parse_json(text));
}

TEST(sqs_json_parse, nesting_100000_deep_parses_without_recursion) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto v = parse_json(deep);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->is_array());
  EXPECT_FALSE(parse_json(std::string(100000, '[') + std::string(99999, ']')));
}

// Random values written with random whitespace and escapes, then mutated.
class generator {
 public:
  explicit generator(std::uint32_t seed) : rng_(seed) {}

  std::string value(int depth) {
    switch (pick(depth > 3 ? 5 : 7)) {
      case 0:
        return "null";
      case 1:
        return pick(2) ? "true" : "false";
      case 2:
        return number();
      case 3:
      case 4:
        return string();
      case 5: {
        std::string out = "[" + ws();
        const int n = pick(4);
        for (int i = 0; i < n; ++i) out += (i ? "," + ws() : "") + value(depth + 1) + ws();
        return out + "]";
      }
      default: {
        std::string out = "{" + ws();
        const int n = pick(4);
        for (int i = 0; i < n; ++i)
          out += (i ? "," + ws() : "") + string() + ws() + ":" + ws() + value(depth + 1) + ws();
        return out + "}";
      }
    }
  }

  std::string mutate(std::string s) {
    if (s.empty()) return s;
    const std::size_t at = static_cast<std::size_t>(pick(static_cast<int>(s.size())));
    static constexpr std::string_view bytes = "{}[],:\"\\ 0-.eu\x01\x80\xC3\xED\xFF";
    switch (pick(3)) {
      case 0:
        s.erase(at, 1);
        break;
      case 1:
        s.insert(at, 1, bytes[static_cast<std::size_t>(pick(static_cast<int>(bytes.size())))]);
        break;
      default:
        s[at] = bytes[static_cast<std::size_t>(pick(static_cast<int>(bytes.size())))];
        break;
    }
    return s;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::string ws() {
    static constexpr const char* spaces[] = {"", "", "", " ", "\n", "\t ", "\r\n"};
    return spaces[pick(7)];
  }
  std::string number() {
    static constexpr const char* numbers[] = {"0",
                                              "-0",
                                              "12",
                                              "-3",
                                              "4.25",
                                              "1e5",
                                              "-2E-3",
                                              "18446744073709551615",
                                              "18446744073709551616",
                                              "-9223372036854775809",
                                              "0.1",
                                              "9007199254740993"};
    return numbers[pick(12)];
  }
  std::string string() {
    static constexpr const char* pieces[] = {"a",
                                             "Id",
                                             " ",
                                             "\\\"",
                                             "\\\\",
                                             "\\/",
                                             "\\n",
                                             "\\u00e9",
                                             "\\u20AC",
                                             "\\ud83d\\ude00",
                                             "\xC3\xA9",
                                             "\xE2\x82\xAC",
                                             "\xF0\x9F\x98\x80",
                                             "\\t",
                                             "x y"};
    std::string out = "\"";
    const int n = pick(5);
    for (int i = 0; i < n; ++i) out += pieces[pick(15)];
    return out + "\"";
  }

  std::mt19937 rng_;
};

TEST(sqs_json_parse, agrees_with_nlohmann_on_20000_generated_texts_valid_and_mutated) {
  generator g(20261207);
  int refused = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = g.value(0);
    if (i % 2 == 1) text = g.mutate(std::move(text));
    if (text.find('\0') != std::string::npos) continue;  // nlohmann stops at a NUL (the test above)
    ASSERT_TRUE(agrees(text)) << "text " << i;
    if (!parse_json(text)) ++refused;
  }
  EXPECT_GT(refused, 1000);  // the mutations did reach the refusals
}

}  // namespace
}  // namespace spool::serve::sqs
