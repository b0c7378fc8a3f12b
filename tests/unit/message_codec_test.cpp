// The message JSON codec (message-queue.md §3): the §3.2 decoding table (scenario 12), round trips (scenario
// 11), encode errors, strict validation (scenario 13), error texts and truncation (scenario 14).
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "spool/error.hpp"
#include "spool/mq/message.hpp"

namespace spool::mq {
namespace {

using namespace std::string_literals;

const std::string kFffd = "\xEF\xBF\xBD";    // U+FFFD REPLACEMENT CHARACTER
const std::string kLongS = "\xC5\xBF";       // U+017F LATIN SMALL LETTER LONG S
const std::string kKelvin = "\xE2\x84\xAA";  // U+212A KELVIN SIGN

// A payload as shown in failure messages: deep-nesting payloads are long.
std::string shown(std::string_view payload) {
  return payload.size() <= 120 ? std::string(payload) : std::string(payload.substr(0, 120)) + "...";
}

// An independent UTF-8 validator for the checks below.
bool valid_utf8(std::string_view s) {
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

std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

message decoded(std::string_view payload) {
  decode_result r = decode(payload);
  EXPECT_TRUE(r.ok()) << "payload " << shown(payload) << " failed: " << r.error;
  EXPECT_EQ(r.ok(), r.error.empty());
  return r.value.value_or(message{});
}

std::string poison_reason(std::string_view payload) {
  decode_result r = decode(payload);
  EXPECT_FALSE(r.ok()) << "payload " << shown(payload) << " was accepted";
  EXPECT_FALSE(r.error.empty());
  return r.error;
}

message full_message() {
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

// ---- §3.4: error texts ------------------------------------------------------------------------------------

TEST(message_decode_error_text, differs_for_different_malformed_inputs_and_quotes_one_character) {
  const std::string first = poison_reason("{ first attempt");
  const std::string still = poison_reason(R"({"still": broken})");
  EXPECT_NE(first, still);
  for (const std::string& text : {first, still}) {
    for (const char* word : {"fir", "att", "tem", "sti", "ill", "bro", "oke"})
      EXPECT_EQ(text.find(word), std::string::npos);
  }
}

TEST(message_decode_error_text, never_contains_a_secret_from_the_payload) {
  const std::string secret = "s3cr3t-XYZ";
  const std::vector<std::string> payloads = {
      R"({"authToken":"s3cr3t-XYZ", "id": 5})",
      R"({"authToken":"s3cr3t-XYZ")",
      "{\"authToken\":\"s3cr3t-XYZ\x01\"}",
      R"({"signingSecret":"s3cr3t-XYZ","highPriority":"s3cr3t-XYZ"})",
      R"({"authToken":s3cr3t-XYZ})",
      R"({"s3cr3t-XYZ"})",
      R"({"authToken":"s3cr3t-XYZ"} s3cr3t-XYZ)",
      R"(["s3cr3t-XYZ"])",
  };
  for (const std::string& p : payloads) {
    const std::string text = poison_reason(p);
    for (std::size_t i = 0; i + 2 <= secret.size(); ++i) {
      EXPECT_EQ(text.find(secret.substr(i, 2)), std::string::npos) << p << " -> " << text;
    }
  }
  // Every prefix and every one-byte corruption of a payload with a secret.
  const std::string good = R"({"id":"m","authToken":"s3cr3t-XYZ","signingSecret":"s3cr3t-XYZ"})";
  std::vector<std::string> variants;
  for (std::size_t n = 0; n < good.size(); ++n) variants.push_back(good.substr(0, n));
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (const char c : {'\x01', '"', '\\', '}', ']', ',', ':', 'x', '\xFF'}) {
      std::string v = good;
      v[i] = c;
      variants.push_back(v);
    }
  }
  for (const std::string& v : variants) {
    const decode_result r = decode(v);
    if (r.ok()) continue;
    for (std::size_t i = 0; i + 2 <= secret.size(); ++i) {
      EXPECT_EQ(r.error.find(secret.substr(i, 2)), std::string::npos) << v << " -> " << r.error;
    }
    EXPECT_TRUE(valid_utf8(r.error)) << r.error;
  }
}

// ---- §3.1 and scenario 11: encoding and round trips -------------------------------------------------------

TEST(message_encode, writes_camel_case_keys_in_table_order) {
  message m = full_message();
  m.extra = {{"zeta", "1"}, {"alpha", R"({"b":[1,2]})"}};
  EXPECT_EQ(
      encode(m),
      R"({"id":"msg-1","poolCode":"POOL","authToken":"tok","signingSecret":"sec","mediationType":"HTTP",)"
      R"("mediationTarget":"https://example.test/hook?a=1&b=2","messageGroupId":"grp","highPriority":true,)"
      R"("dispatchMode":"BLOCK_ON_ERROR","zeta":1,"alpha":{"b":[1,2]}})");
}

TEST(message_encode, a_zero_message_writes_only_the_always_keys) {
  EXPECT_EQ(encode(message{}), R"({"id":"","mediationType":"","mediationTarget":""})");
}

TEST(message_encode, unset_optionals_are_absent_and_never_null) {
  message m = full_message();
  m.auth_token.reset();
  m.signing_secret.reset();
  m.message_group_id.reset();
  m.high_priority = false;
  m.pool_code.clear();
  m.dispatch_mode.clear();
  const std::string text = encode(m);
  EXPECT_EQ(text,
            R"({"id":"msg-1","mediationType":"HTTP","mediationTarget":"https://example.test/hook?a=1&b=2"})");
  EXPECT_EQ(text.find("null"), std::string::npos);
}

TEST(message_encode, a_set_but_empty_auth_token_is_written_as_an_empty_string) {
  message m;
  m.auth_token = "";
  m.message_group_id = "";
  EXPECT_EQ(encode(m),
            R"({"id":"","authToken":"","mediationType":"","mediationTarget":"","messageGroupId":""})");
  EXPECT_EQ(decoded(encode(m)), m);
}

TEST(message_encode, escapes_quotes_backslashes_and_control_characters_only) {
  message m;
  m.id = "a\"b\\c\b\f\n\r\t\x01\x1f\x7f/<>&\xC3\xA9\xE2\x80\xA8"s + '\0';
  EXPECT_EQ(encode(m),
            "{\"id\":\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f\x7f/<>&\xC3\xA9\xE2\x80\xA8\\u0000\","
            "\"mediationType\":\"\",\"mediationTarget\":\"\"}");
  EXPECT_EQ(decoded(encode(m)), m);
}

TEST(message_encode, round_trips_every_field_and_extra) {
  message m = full_message();
  m.extra = {{"u", "18446744073709551615"},
             {"i", "-9223372036854775808"},
             {"s", "\"caf\xC3\xA9\""},
             {"o", R"({"a":[true,false,null,{"b":-1.5e-3}]})"},
             {"k\xC3\xA9y", "[]"}};
  EXPECT_EQ(decoded(encode(m)), m);
}

TEST(message_encode, a_decoded_payload_re_encodes_with_its_content_unchanged) {
  const std::string payload =
      R"({"id":"a","x":{"n":18446744073709551615},"mediationTarget":"t","y":[-9223372036854775808],)"
      R"("mediationType":"HTTP","z":"\u00e9"})";
  const std::string text = encode(decoded(payload));
  EXPECT_EQ(text, R"({"id":"a","mediationType":"HTTP","mediationTarget":"t","x":{"n":18446744073709551615},)"
                  R"("y":[-9223372036854775808],"z":"é"})");
  EXPECT_EQ(encode(decoded(text)), text);
}

TEST(message_encode, trims_whitespace_around_an_extra_value) {
  message m;
  m.extra = {{"x", " \n[1, 2]\t "}};
  EXPECT_EQ(encode(m), R"({"id":"","mediationType":"","mediationTarget":"","x":[1, 2]})");
}

TEST(message_encode, accepts_an_extra_value_nested_to_the_payload_limit) {
  message m;
  m.extra = {{"x", repeat("[", 9999) + repeat("]", 9999)}};
  EXPECT_EQ(decoded(encode(m)), m);
}

void expect_invalid_argument(const message& m, const std::string& needle) {
  try {
    (void)encode(m);
    ADD_FAILURE() << "encode did not throw; expected " << needle;
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(message_encode, invalid_utf8_in_a_field_is_invalid_argument_naming_the_field) {
  const std::string bad = "ok\xFF";
  struct setter {
    const char* name;
    void (*set)(message&, const std::string&);
  };
  const setter setters[] = {
      {"id", [](message& m, const std::string& v) { m.id = v; }},
      {"poolCode", [](message& m, const std::string& v) { m.pool_code = v; }},
      {"authToken", [](message& m, const std::string& v) { m.auth_token = v; }},
      {"signingSecret", [](message& m, const std::string& v) { m.signing_secret = v; }},
      {"mediationType", [](message& m, const std::string& v) { m.mediation_type = v; }},
      {"mediationTarget", [](message& m, const std::string& v) { m.mediation_target = v; }},
      {"messageGroupId", [](message& m, const std::string& v) { m.message_group_id = v; }},
      {"dispatchMode", [](message& m, const std::string& v) { m.dispatch_mode = v; }},
  };
  for (const setter& s : setters) {
    for (const std::string& v : {bad, "\xED\xA0\x80"s, "\xC0\xAF"s, "x\xE2\x82"s}) {
      message m = full_message();
      s.set(m, v);
      expect_invalid_argument(m, std::string("encode: field ") + s.name + " is not valid UTF-8");
    }
  }
}

TEST(message_encode, an_extra_key_matching_a_known_key_is_invalid_argument) {
  for (const std::string& key :
       {"id"s, "ID"s, "mediationtarget"s, kLongS + "igningSecret", "authTo" + kKelvin + "en"}) {
    message m;
    m.extra = {{key, "1"}};
    expect_invalid_argument(m, "encode: extra key \"" + key + "\" matches the known key");
  }
}

TEST(message_encode, an_extra_key_that_is_not_utf8_is_invalid_argument) {
  message m;
  m.extra = {{"a", "1"}, {"b\xFF", "1"}};
  expect_invalid_argument(m, "encode: extra key #1 is not valid UTF-8");
}

TEST(message_encode, an_extra_value_that_is_not_one_json_value_is_invalid_argument) {
  for (const std::string& json :
       {""s, " "s, "{"s, "01"s, "[1,]"s, "1 2"s, "{\"a\":1}}"s, "nul"s, "'a'"s, "\"a\nb\""s, "\"\xFF\""s,
        "\xEF\xBB\xBF"
        "1"s,
        repeat("[", 10000) + repeat("]", 10000)}) {
    message m;
    m.extra = {{"x", json}};
    expect_invalid_argument(m, "encode: extra member \"x\" is not one valid JSON value: ");
  }
}

// Every accepted payload round-trips through encode; the decoder survives arbitrary corruption.
TEST(message_codec, corrupted_payloads_either_poison_or_round_trip) {
  const std::vector<std::string> seeds = {
      encode(full_message()),
      R"({"id":"a","x":[1,{"y":"\u00e9\ud800"}],"ID":null,"highPriority":false,"n":-1.5e3})",
      "{\"k\xC5\xBF\":\"\xE2\x82\xAC\",\"authToken\":\"\",\"e\":{}}",
  };
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]\",:\\ u0123456789abcdefnrtl-+.eE\x01\x7f\x80\xC5\xBF\xE2\x84\xAA\xFF";
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string p = seeds[iter % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !p.empty(); ++e) {
      const std::size_t at = rng() % p.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          p[at] = c;
          break;
        case 1:
          p.insert(p.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          p.erase(at, 1);
          break;
      }
    }
    const decode_result r = decode(p);
    ASSERT_EQ(r.ok(), r.error.empty());
    if (!r.ok()) {
      EXPECT_TRUE(valid_utf8(r.error)) << r.error;
      continue;
    }
    ++accepted;
    std::string text;
    try {
      text = encode(*r.value);
    } catch (const spool::error& e) {
      // Only a folded extra key cannot arise from decoding; nothing else may fail.
      ADD_FAILURE() << "payload " << p << " decoded but did not encode: " << e.what();
      continue;
    }
    EXPECT_EQ(decoded(text), *r.value) << p;
  }
  EXPECT_GT(accepted, 100);
}

// ---- §3.3 and scenario 13: strict validation --------------------------------------------------------------

TEST(message_strict, quarantines_an_empty_object_and_null_which_lenient_mode_delivers) {
  EXPECT_EQ(strict_violation(decoded("{}"), "row-1"), "strict: empty id");
  EXPECT_EQ(strict_violation(decoded("null"), "row-1"), "strict: empty id");
}

TEST(message_strict, quarantines_an_empty_target) {
  EXPECT_EQ(strict_violation(decoded(R"({"id":"a","mediationType":"HTTP"})"), "a"),
            "strict: empty mediationTarget");
}

TEST(message_strict, quarantines_an_unknown_mediation_type) {
  EXPECT_EQ(strict_violation(decoded(R"({"id":"a","mediationType":"SMTP","mediationTarget":"t"})"), "a"),
            R"(strict: unknown mediationType "SMTP")");
  EXPECT_EQ(strict_violation(decoded(R"({"id":"a","mediationTarget":"t"})"), "a"),
            R"(strict: unknown mediationType "")");
  EXPECT_EQ(strict_violation(decoded(R"({"id":"a","mediationType":"http","mediationTarget":"t"})"), "a"),
            R"(strict: unknown mediationType "http")");
}

TEST(message_strict, quarantines_an_id_mismatch) {
  EXPECT_EQ(strict_violation(decoded(R"({"id":"a","mediationType":"HTTP","mediationTarget":"t"})"), "b"),
            R"(strict: payload id "a" differs from row id "b")");
}

TEST(message_strict, checks_in_order_id_target_type_row_id) {
  message m;
  m.id = "a";
  m.mediation_type = "SMTP";
  EXPECT_EQ(strict_violation(m, "b"), "strict: empty mediationTarget");
  m.mediation_target = "t";
  EXPECT_EQ(strict_violation(m, "b"), R"(strict: unknown mediationType "SMTP")");
  m.mediation_type = "HTTP";
  EXPECT_EQ(strict_violation(m, "b"), R"(strict: payload id "a" differs from row id "b")");
  EXPECT_EQ(strict_violation(m, "a"), "");
  EXPECT_EQ(strict_violation(full_message(), "msg-1"), "");
}

TEST(message_strict, cuts_quoted_values_to_64_bytes_on_a_character_boundary) {
  message m = full_message();
  m.id = repeat("\xC3\xA9", 100);  // 200 bytes
  const std::string row = repeat("r", 65) + "\xE2\x82\xAC";
  EXPECT_EQ(strict_violation(m, row), "strict: payload id \"" + repeat("\xC3\xA9", 32) +
                                          "\" differs from row id \"" + repeat("r", 64) + "\"");
  m.mediation_type = "S" + repeat("\xE2\x82\xAC", 30);  // 91 bytes: cut to 64 = S + 21 euro signs
  EXPECT_EQ(strict_violation(m, row),
            "strict: unknown mediationType \"S" + repeat("\xE2\x82\xAC", 21) + "\"");
}

TEST(message_strict, quoted_values_are_escaped_and_storable) {
  message m = full_message();
  m.mediation_type = "a\"b\n"s + '\0' + "\xFF";
  EXPECT_EQ(strict_violation(m, "msg-1"), "strict: unknown mediationType \"a\\\"b\\n\\u0000" + kFffd + "\"");
}

// ---- §3.4 and scenario 14: truncation ---------------------------------------------------------------------

TEST(message_truncate, a_long_multi_byte_text_is_cut_to_1000_bytes_of_valid_utf8) {
  const std::string text = "error: " + repeat("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 200);  // 1807 bytes
  const std::string cut = truncate_utf8(text);
  EXPECT_LE(cut.size(), 1000u);
  EXPECT_GE(cut.size(), 997u);
  EXPECT_TRUE(valid_utf8(cut));
  EXPECT_EQ(text.compare(0, cut.size(), cut), 0);
}

TEST(message_truncate, every_cut_point_keeps_whole_characters) {
  const std::string unit = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // 1 + 2 + 3 + 4 bytes
  const std::string text = repeat(unit, 10);
  for (std::size_t max = 0; max <= text.size() + 1; ++max) {
    const std::string cut = truncate_utf8(text, max);
    EXPECT_LE(cut.size(), max);
    EXPECT_GE(cut.size() + 3, std::min(max, text.size()));
    EXPECT_TRUE(valid_utf8(cut)) << max;
    EXPECT_EQ(text.compare(0, cut.size(), cut), 0);
  }
}

TEST(message_truncate, short_text_is_unchanged) {
  EXPECT_EQ(truncate_utf8("h\xC3\xA9llo"), "h\xC3\xA9llo");
  EXPECT_EQ(truncate_utf8("abc", 3), "abc");
  EXPECT_EQ(truncate_utf8("", 0), "");
  EXPECT_EQ(truncate_utf8("\xC3\xA9", 1), "");
}

TEST(message_truncate, invalid_input_never_ends_in_a_partial_sequence) {
  EXPECT_EQ(truncate_utf8(repeat("a", 999) + "\xE2\x82\xAC", 1000), repeat("a", 999));
  EXPECT_EQ(truncate_utf8(repeat("a", 999) + "\xE2" + "bc", 1000), repeat("a", 999));
  EXPECT_EQ(truncate_utf8(repeat("\xFF", 1200)), repeat("\xFF", 1000));
  EXPECT_EQ(truncate_utf8(repeat("\x80", 1200)), repeat("\x80", 1000));
  EXPECT_EQ(truncate_utf8("ab\xF0\x9F\x98\x80", 5), "ab");
  EXPECT_EQ(truncate_utf8("ab\xF0\x9F\x98\x80", 6), "ab\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace spool::mq
