// The message JSON codec (message-queue.md §3), decoding: the §3.2 table of
// poison rows and of delivered rows (scenario 12). Encoding, round trips,
// strict validation, error texts and truncation are in
// message_encode_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "message_codec_support.hpp"
#include "spool/error.hpp"
#include "spool/mq/message.hpp"

namespace spool::mq {
namespace {

using namespace std::string_literals;
using namespace codec_test;

// ---- §3.2: every poison row, with the exact reason --------------------------------------------------------

struct poison_case {
  const char* scenario;
  std::string payload;
  std::string reason;
};
std::ostream& operator<<(std::ostream& os, const poison_case& c) { return os << c.scenario; }

class message_decode_poison : public testing::TestWithParam<poison_case> {};

TEST_P(message_decode_poison, is_quarantined_with_a_reason_naming_rule_and_offset) {
  EXPECT_EQ(poison_reason(GetParam().payload), GetParam().reason);
}

const poison_case kPoison[] = {
    {"empty_input", "", "unexpected end of JSON input at offset 0"},
    {"whitespace_only_input", " \n\t\r", "unexpected end of JSON input at offset 4"},
    {"a_leading_byte_order_mark", "\xEF\xBB\xBF{}", "byte-order mark not allowed at offset 0"},
    {"a_byte_order_mark_after_whitespace", " \xEF\xBB\xBF{}",
     "invalid character '\\xef' looking for beginning of value at offset 1"},
    {"an_object_cut_after_a_member", R"({"id":"a")", "unexpected end of JSON input at offset 9"},
    {"an_object_cut_inside_a_string", R"({"id":"a)", "unexpected end of JSON input at offset 8"},
    {"an_object_cut_inside_a_literal", R"({"highPriority":tru)", "unexpected end of JSON input at offset 19"},
    {"an_object_cut_inside_an_escape", R"({"id":"\u00)", "unexpected end of JSON input at offset 11"},
    {"a_lone_opening_brace", "{", "unexpected end of JSON input at offset 1"},
    {"an_unquoted_key", "{ first attempt",
     "invalid character 'f' looking for beginning of object key string at offset 2"},
    {"an_unquoted_value", R"({"still": broken})",
     "invalid character 'b' looking for beginning of value at offset 10"},
    {"single_quoted_strings", "{'id':'a'}",
     "invalid character '\\'' looking for beginning of object key string at offset 1"},
    {"a_missing_colon", R"({"id" "a"})", "invalid character '\"' after object key at offset 6"},
    {"a_missing_comma", R"({"id":"a" "poolCode":"b"})",
     "invalid character '\"' after object key:value pair at offset 10"},
    {"a_trailing_comma_in_the_object", R"({"id":"a",})",
     "invalid character '}' looking for beginning of object key string at offset 10"},
    {"a_trailing_comma_in_a_nested_array", R"({"x":[1,]})",
     "invalid character ']' looking for beginning of value at offset 8"},
    {"a_comment", "{/*c*/}", "invalid character '/' looking for beginning of object key string at offset 1"},
    {"a_raw_control_character_in_a_string", "{\"id\":\"a\nb\"}",
     "invalid character '\\x0a' in string literal at offset 8"},
    {"an_unknown_escape", R"({"id":"\x"})", "invalid character 'x' in string escape code at offset 8"},
    {"a_bad_unicode_escape", R"({"id":"\u12g4"})",
     "invalid character 'g' in \\u hexadecimal character escape at offset 11"},
    {"a_misspelled_literal", R"({"highPriority":ture})",
     "invalid character 'u' in literal true (expecting 'r') at offset 17"},
    {"a_number_with_a_leading_zero", R"({"x":01})",
     "invalid character '1' after object key:value pair at offset 6"},
    {"a_lone_minus", R"({"x":-})", "invalid character '}' in numeric literal at offset 6"},
    {"a_number_ending_in_a_point", R"({"x":1.})",
     "invalid character '}' after decimal point in numeric literal at offset 7"},
    {"a_number_starting_with_a_point", R"({"x":.5})",
     "invalid character '.' looking for beginning of value at offset 5"},
    {"an_empty_exponent", R"({"x":1e})", "invalid character '}' in exponent of numeric literal at offset 7"},
    {"a_plus_sign", R"({"x":+1})", "invalid character '+' looking for beginning of value at offset 5"},
    {"nan", R"({"x":NaN})", "invalid character 'N' looking for beginning of value at offset 5"},
    {"a_hex_number", R"({"x":0x1})", "invalid character 'x' after object key:value pair at offset 6"},
    {"a_cut_off_null", "nul", "unexpected end of JSON input at offset 3"},
    {"text_after_the_object", "{} x", "invalid character 'x' after top-level value at offset 3"},
    {"two_objects", "{}{}", "invalid character '{' after top-level value at offset 2"},
    {"text_after_null", "null x", "invalid character 'x' after top-level value at offset 5"},
    {"a_stray_byte_after_the_object", "{\"id\":\"a\"}\xff",
     "invalid character '\\xff' after top-level value at offset 10"},
    {"a_top_level_array", "[]", "cannot unmarshal array into message of type object at offset 0"},
    {"a_top_level_string", R"("x")", "cannot unmarshal string into message of type object at offset 0"},
    {"a_top_level_number", " 42", "cannot unmarshal number into message of type object at offset 1"},
    {"a_top_level_true", "true", "cannot unmarshal bool into message of type object at offset 0"},
    {"a_top_level_false", "false", "cannot unmarshal bool into message of type object at offset 0"},
    {"a_number_for_id", R"({"id": 5})", "cannot unmarshal number into field id of type string at offset 7"},
    {"a_string_for_high_priority", R"({"highPriority":"true"})",
     "cannot unmarshal string into field highPriority of type bool at offset 16"},
    {"a_number_for_high_priority", R"({"highPriority":1})",
     "cannot unmarshal number into field highPriority of type bool at offset 16"},
    {"an_object_for_mediation_target", R"({"mediationTarget":{}})",
     "cannot unmarshal object into field mediationTarget of type string at offset 19"},
    {"an_array_for_auth_token", R"({"authToken":["a"]})",
     "cannot unmarshal array into field authToken of type string at offset 13"},
    {"a_bool_for_dispatch_mode", R"({"dispatchMode":false})",
     "cannot unmarshal bool into field dispatchMode of type string at offset 16"},
    {"a_number_for_a_folded_id_key", R"({"ID":5})",
     "cannot unmarshal number into field id of type string at offset 6"},
    {"the_first_of_two_type_errors", R"({"id":5,"poolCode":true})",
     "cannot unmarshal number into field id of type string at offset 6"},
    {"a_syntax_error_after_a_type_error", R"({"id":5,)", "unexpected end of JSON input at offset 8"},
    {"nesting_of_10001_levels_inside_an_unknown_key",
     R"({"x":)" + repeat("[", 10000) + repeat("]", 10000) + "}",
     "exceeded max nesting depth 10000 at offset 10004"},
    {"nesting_of_10001_objects_inside_an_unknown_key",
     R"({"x":)" + repeat(R"({"a":)", 9999) + "{}" + repeat("}", 10000),
     "exceeded max nesting depth 10000 at offset 50000"},
    {"a_top_level_array_of_10001_levels", repeat("[", 10001) + repeat("]", 10001),
     "exceeded max nesting depth 10000 at offset 10000"},
    {"a_million_open_brackets", R"({"x":)" + repeat("[", 1000000),
     "exceeded max nesting depth 10000 at offset 10004"},
};

INSTANTIATE_TEST_SUITE_P(table, message_decode_poison, testing::ValuesIn(kPoison),
                         [](const testing::TestParamInfo<poison_case>& info) { return info.param.scenario; });

// ---- §3.2: every delivered row ----------------------------------------------------------------------------

TEST(message_decode, a_top_level_null_is_an_all_zero_message) {
  EXPECT_EQ(decoded("null"), message{});
  EXPECT_EQ(decoded(" \n null \t"), message{});
}

TEST(message_decode, an_empty_object_is_a_zero_message) {
  EXPECT_EQ(decoded("{}"), message{});
  EXPECT_EQ(decoded(" {\n } "), message{});
}

TEST(message_decode, missing_keys_stay_zero_or_unset) {
  message want;
  want.id = "a";
  EXPECT_EQ(decoded(R"({"id":"a"})"), want);
}

TEST(message_decode, every_known_key_is_read) {
  const message m = decoded(
      R"({ "id" : "msg-1", "poolCode":"POOL","authToken":"tok","signingSecret":"sec","mediationType":"HTTP",)"
      R"("mediationTarget":"https://example.test/hook?a=1&b=2","messageGroupId":"grp","highPriority":true,)"
      R"("dispatchMode":"BLOCK_ON_ERROR"})");
  EXPECT_EQ(m, full_message());
}

TEST(message_decode, a_set_but_empty_optional_stays_set) {
  const message m = decoded(R"({"authToken":"","signingSecret":"","messageGroupId":""})");
  EXPECT_EQ(m.auth_token, "");
  EXPECT_EQ(m.signing_secret, "");
  EXPECT_EQ(m.message_group_id, "");
}

TEST(message_decode, null_unsets_optional_fields) {
  const message m = decoded(R"({"authToken":"t","signingSecret":"s","messageGroupId":"g",)"
                            R"("authToken":null,"signingSecret":null,"messageGroupId":null})");
  EXPECT_EQ(m, message{});
  EXPECT_FALSE(decoded(R"({"authToken":null})").auth_token.has_value());
}

TEST(message_decode, null_keeps_the_current_value_of_other_fields) {
  const message m =
      decoded(R"({"id":"a","poolCode":"p","mediationType":"HTTP","mediationTarget":"t","highPriority":true,)"
              R"("dispatchMode":"d","id":null,"poolCode":null,"mediationType":null,"mediationTarget":null,)"
              R"("highPriority":null,"dispatchMode":null})");
  EXPECT_EQ(m.id, "a");
  EXPECT_EQ(m.pool_code, "p");
  EXPECT_EQ(m.mediation_type, "HTTP");
  EXPECT_EQ(m.mediation_target, "t");
  EXPECT_TRUE(m.high_priority);
  EXPECT_EQ(m.dispatch_mode, "d");
  EXPECT_EQ(decoded(R"({"id":null})"), message{});
}

TEST(message_decode, high_priority_false_is_read) {
  EXPECT_FALSE(decoded(R"({"highPriority":true,"highPriority":false})").high_priority);
}

TEST(message_decode, unknown_keys_are_kept_in_extra_in_the_order_read) {
  const message m = decoded(R"({"z":1,"id":"a","b":{"c":[true,false,null]},"a":"s"})");
  EXPECT_EQ(m.id, "a");
  const std::vector<extra_member> want = {{"z", "1"}, {"b", R"({"c":[true,false,null]})"}, {"a", R"("s")"}};
  EXPECT_EQ(m.extra, want);
}

TEST(message_decode, extra_values_are_re_emitted_compactly) {
  const message m = decoded("{\"x\" : [ 1 , { \"a\" : \"b\" } , { } , [ ] , true , null ]\n}");
  ASSERT_EQ(m.extra.size(), 1u);
  EXPECT_EQ(m.extra[0].json, R"([1,{"a":"b"},{},[],true,null])");
}

TEST(message_decode, extra_numbers_are_spelled_as_read) {
  const message m =
      decoded(R"({"u":18446744073709551615,"i":-9223372036854775808,"f":-0.5e+10,"g":1E-7,"h":0,"big":)"
              R"(123456789012345678901234567890})");
  const std::vector<extra_member> want = {{"u", "18446744073709551615"},
                                          {"i", "-9223372036854775808"},
                                          {"f", "-0.5e+10"},
                                          {"g", "1E-7"},
                                          {"h", "0"},
                                          {"big", "123456789012345678901234567890"}};
  EXPECT_EQ(m.extra, want);
}

TEST(message_decode, extra_strings_are_re_encoded_as_valid_json) {
  const message m = decoded(R"({"x":"a\u0000\"\\\/\n\u00e9\ud83d\ude00","y":["\u001f"]})");
  ASSERT_EQ(m.extra.size(), 2u);
  EXPECT_EQ(m.extra[0].json, "\"a\\u0000\\\"\\\\/\\n\xC3\xA9\xF0\x9F\x98\x80\"");
  EXPECT_EQ(m.extra[1].json, R"(["\u001f"])");
}

TEST(message_decode, a_repeated_unknown_key_keeps_its_first_position_and_last_value) {
  const message m = decoded(R"({"a":1,"b":2,"a":[3],"c":4,"A":5})");
  const std::vector<extra_member> want = {{"a", "[3]"}, {"b", "2"}, {"c", "4"}, {"A", "5"}};
  EXPECT_EQ(m.extra, want);
}

TEST(message_decode, many_repeated_unknown_keys_keep_first_positions_and_last_values) {
  std::string payload = "{";
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 2000; ++k) payload += "\"k" + std::to_string(k) + "\":" + std::to_string(round) + ",";
  }
  payload += R"("id":"x"})";
  const message m = decoded(payload);
  ASSERT_EQ(m.extra.size(), 2000u);
  for (int k = 0; k < 2000; ++k) {
    EXPECT_EQ(m.extra[k].key, "k" + std::to_string(k));
    EXPECT_EQ(m.extra[k].json, "2");
  }
}

TEST(message_decode, an_unknown_key_may_hold_any_type) {
  const message m = decoded(R"({"highPriorityX":"yes","n":null,"t":true})");
  const std::vector<extra_member> want = {{"highPriorityX", R"("yes")"}, {"n", "null"}, {"t", "true"}};
  EXPECT_EQ(m.extra, want);
}

TEST(message_decode, a_key_in_another_case_matches_its_field) {
  const message m = decoded(
      R"({"ID":"a","POOLCODE":"p","MediationTarget":"t","mediationtype":"HTTP","HighPriority":true})");
  EXPECT_EQ(m.id, "a");
  EXPECT_EQ(m.pool_code, "p");
  EXPECT_EQ(m.mediation_target, "t");
  EXPECT_EQ(m.mediation_type, "HTTP");
  EXPECT_TRUE(m.high_priority);
  EXPECT_TRUE(m.extra.empty());
}

TEST(message_decode, long_s_folds_onto_s) {
  // U+017F LATIN SMALL LETTER LONG S, raw and escaped.
  const message m =
      decoded("{\"" + kLongS + "igning" + kLongS + R"(ecret":"x","me\u017f\u017fageGroupId":"g"})");
  EXPECT_EQ(m.signing_secret, "x");
  EXPECT_EQ(m.message_group_id, "g");
  EXPECT_TRUE(m.extra.empty());
}

TEST(message_decode, the_kelvin_sign_folds_onto_k) {
  // U+212A KELVIN SIGN, raw and escaped.
  EXPECT_EQ(decoded(R"({"authTo)" + kKelvin + R"(en":"t"})").auth_token, "t");
  EXPECT_EQ(decoded(R"({"AUTHTO\u212AEN":"t"})").auth_token, "t");
}

TEST(message_decode, other_look_alike_letters_do_not_fold) {
  // U+0131 DOTLESS I and U+0130 CAPITAL I WITH DOT have no simple case folding onto i.
  const std::string dotless_i = "\xC4\xB1", dotted_capital_i = "\xC4\xB0";
  const message m =
      decoded(R"({")" + dotless_i + R"(d":"a",")" + dotted_capital_i + R"(d":"b","i d":"c","idx":"d"})");
  EXPECT_EQ(m.id, "");
  EXPECT_EQ(m.extra.size(), 4u);
}

TEST(message_decode, an_exact_match_is_preferred_and_the_last_occurrence_wins) {
  // No key spells a field differently from an exact match, so each spelling lands on the same field and the
  // members apply in order.
  EXPECT_EQ(decoded(R"({"ID":"a","id":"b"})").id, "b");
  EXPECT_EQ(decoded(R"({"id":"b","ID":"a"})").id, "a");
  EXPECT_EQ(decoded(R"({"id":"a","id":"b"})").id, "b");
  EXPECT_EQ(
      decoded(R"({"mediationTarget":"x","MEDIATIONTARGET":"y","mediationTarget":"z"})").mediation_target,
      "z");
}

TEST(message_decode, escaped_keys_are_decoded_before_matching) {
  EXPECT_EQ(decoded(R"({"\u0069\u0064":"a"})").id, "a");
}

TEST(message_decode, string_escapes_are_decoded) {
  EXPECT_EQ(decoded(R"({"id":"\"\\\/\b\f\n\r\t\u00e9\u20AC\ud83d\ude00"})").id,
            "\"\\/\b\f\n\r\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_EQ(decoded(R"({"id":"\u0000"})").id, "\0"s);
}

TEST(message_decode, go_escaped_html_characters_decode) {
  const message m = decoded(R"({"mediationTarget":"http://x/?a=1\u0026b=\u003ct\u003e\u2028"})");
  EXPECT_EQ(m.mediation_target, "http://x/?a=1&b=<t>\xE2\x80\xA8");
}

TEST(message_decode, an_unpaired_surrogate_escape_becomes_u_fffd) {
  EXPECT_EQ(decoded(R"({"id":"\ud800"})").id, kFffd);
  EXPECT_EQ(decoded(R"({"id":"\udc00x"})").id, kFffd + "x");
  EXPECT_EQ(decoded(R"({"id":"\ud800\u0041"})").id, kFffd + "A");
  EXPECT_EQ(decoded(R"({"id":"\ud800\ud800"})").id, kFffd + kFffd);
  EXPECT_EQ(decoded(R"({"id":"\ud800\ud83d\ude00"})").id, kFffd + "\xF0\x9F\x98\x80");
  EXPECT_EQ(decoded(R"({"id":"\ude00\ud83d"})").id, kFffd + kFffd);
  EXPECT_EQ(decoded(R"({"id":"\ud800\n"})").id, kFffd + "\n");
}

TEST(message_decode, invalid_utf8_becomes_u_fffd_per_bad_byte) {
  EXPECT_EQ(decoded(R"({"id":"a)" + "\xFF"s + R"(b"})").id, "a" + kFffd + "b");
  EXPECT_EQ(decoded("{\"id\":\"\xE2\x82x\"}").id, kFffd + kFffd + "x");       // cut-short sequence
  EXPECT_EQ(decoded("{\"id\":\"\xC0\xAF\"}").id, kFffd + kFffd);              // overlong
  EXPECT_EQ(decoded("{\"id\":\"\xED\xA0\x80\"}").id, kFffd + kFffd + kFffd);  // encoded surrogate
  EXPECT_EQ(decoded("{\"id\":\"\xF4\x90\x80\x80\"}").id, repeat(kFffd, 4));   // beyond U+10FFFF
  EXPECT_EQ(decoded("{\"id\":\"\x80\"}").id, kFffd);                          // stray continuation
  EXPECT_EQ(decoded("{\"id\":\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"}").id,
            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST(message_decode, invalid_utf8_in_keys_and_extra_values_becomes_u_fffd) {
  const message m = decoded(R"({"k)" + "\xFF"s + R"(":"v)" + "\xFE"s + R"(","i)" + "\xFF"s + R"(d":[")" +
                            "\xC3"s + R"("]})");
  const std::vector<extra_member> want = {{"k" + kFffd, "\"v" + kFffd + "\""},
                                          {"i" + kFffd + "d", "[\"" + kFffd + "\"]"}};
  EXPECT_EQ(m.extra, want);
  EXPECT_EQ(m.id, "");
}

TEST(message_decode, nesting_of_10000_levels_is_accepted) {
  const std::string deep = repeat("[", 9999) + repeat("]", 9999);  // the payload object is level 1
  const message m = decoded(R"({"x":)" + deep + "}");
  ASSERT_EQ(m.extra.size(), 1u);
  EXPECT_EQ(m.extra[0].json, deep);
  const std::string objects = repeat(R"({"a":)", 9998) + "{}" + repeat("}", 9998);
  const message o = decoded(R"({"x":)" + objects + "}");
  ASSERT_EQ(o.extra.size(), 1u);
  EXPECT_EQ(o.extra[0].json, objects);
}

TEST(message_decode, a_wrong_type_error_never_quotes_the_value) {
  EXPECT_EQ(poison_reason(R"({"id":"ok","mediationTarget":["https://secret.example"]})"),
            "cannot unmarshal array into field mediationTarget of type string at offset 29");
}

}  // namespace
}  // namespace spool::mq
