// The message's first-class body and attributes (spool/mq/message.hpp): on
// the wire as the members "body" and "messageAttributes", which legacy
// readers keep as unknown members.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "spool/error.hpp"
#include "spool/mq/message.hpp"

namespace spool::mq {
namespace {

message with_body() {
  message m;
  m.id = "m1";
  m.mediation_type = "SQS";
  m.mediation_target = "orders";
  m.body = "héllo \"world\"\n";
  m.attributes = {
      {"trace", "String", "abc"}, {"n", "Number.int", "42"}, {"raw", "Binary", std::string("\0\xff", 2)}};
  return m;
}

TEST(message_body, round_trips_the_body_and_attributes_of_every_type) {
  const auto m = with_body();
  const auto r = decode(encode(m));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(*r.value, m);
  EXPECT_TRUE(r.value->extra.empty());
}

TEST(message_body, is_written_after_the_nine_keys_as_members_a_legacy_reader_sees_as_unknown) {
  const auto wire = nlohmann::ordered_json::parse(encode(with_body()));
  std::vector<std::string> keys;
  for (const auto& [k, v] : wire.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"id", "mediationType", "mediationTarget", "body",
                                            "messageAttributes"}));
  EXPECT_EQ(wire["messageAttributes"]["raw"],
            (nlohmann::ordered_json{{"dataType", "Binary"}, {"binaryValue", "AP8="}}));
  EXPECT_EQ(wire["messageAttributes"]["n"]["stringValue"], "42");
}

TEST(message_body, a_legacy_message_has_no_body_and_encodes_as_before) {
  const std::string legacy = R"({"id":"a","mediationType":"HTTP","mediationTarget":"t"})";
  const auto r = decode(legacy);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value->body);
  EXPECT_TRUE(r.value->attributes.empty());
  EXPECT_EQ(encode(*r.value), legacy);
}

TEST(message_body, a_body_written_by_another_encoder_decodes_to_the_same_text) {
  // Escapes a Go or Java writer may use, a surrogate pair, an unpaired
  // surrogate (U+FFFD, as Go decodes it), a repeated key (the last wins) and
  // whitespace between tokens.
  const std::string wire = R"({"id":"a", "body" : "first", "body" : )"
                           R"("tab\there \u00e9\u20ac \ud83d\ude00 \ud800 \/ \"q\" \\ \n"})";
  const auto r = decode(wire);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->body);
  EXPECT_EQ(*r.value->body, "tab\there \xC3\xA9\xE2\x82\xAC \xF0\x9F\x98\x80 \xEF\xBF\xBD / \"q\" \\ \n");
  EXPECT_TRUE(r.value->extra.empty());
}

TEST(message_body, members_of_another_shape_stay_unknown_members_and_round_trip) {
  const std::string odd =
      R"({"id":"a","mediationType":"","mediationTarget":"","body":5,"messageAttributes":[1]})";
  const auto r = decode(odd);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_FALSE(r.value->body);
  ASSERT_EQ(r.value->extra.size(), 2U);
  EXPECT_EQ(encode(*r.value), odd);
}

TEST(message_body, refuses_invalid_utf8_in_a_body_and_an_extra_member_that_repeats_it) {
  auto m = with_body();
  m.body = std::string("\xc3");
  try {
    (void)encode(m);
    ADD_FAILURE() << "encoded an invalid body";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
  }
  auto twice = with_body();
  twice.extra.push_back({"body", "\"again\""});
  EXPECT_THROW((void)encode(twice), error);
}

}  // namespace
}  // namespace spool::mq
