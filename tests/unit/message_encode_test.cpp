// The message JSON codec (message-queue.md §3), continued from
// message_codec_test.cpp: error texts and truncation (scenario 14), encoding
// and round trips (scenario 11), encode errors and strict validation
// (scenario 13).
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
