// Envelope, limits, validation order and canonical JSON (outbox.md §2;
// scenarios 1 and 2). Engine-free.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include "outbox_fixture.hpp"
#include "outbox/text.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

envelope valid() {
  envelope e;
  e.id = "id-1";
  e.topic = "orders";
  e.payload = "p";
  return e;
}

TEST(outbox_envelope, the_builder_gives_microsecond_utc_times_zero_counters_and_maps_version_zero_to_one) {
  envelope_builder b;
  envelope_params p;
  p.topic = "orders";
  p.payload_version = 0;
  p.available_at = std::chrono::sys_time<std::chrono::nanoseconds>(std::chrono::nanoseconds(1'700'000'000'123'456'789));
  const auto e = b.build(p);
  EXPECT_EQ(e.payload_version, 1);
  EXPECT_EQ(e.claim_count, 0u);
  EXPECT_EQ(e.failure_count, 0u);
  EXPECT_FALSE(e.created_at.has_value());
  EXPECT_EQ(e.available_at->time_since_epoch().count(), 1'700'000'000'123'456);  // truncated toward the past
  EXPECT_EQ(e.id.size(), 36u);
  EXPECT_EQ(e.id[14], '7');  // UUIDv7
}

TEST(outbox_envelope, canonical_json_equals_the_pinned_fixture_under_any_tz_and_round_trips) {
  ::setenv("TZ", "America/New_York", 1);
  ::tzset();
  envelope e;
  e.id = "0190f1a2-0000-7000-8000-000000000001";
  e.topic = "orders.created";
  e.payload = std::string("\x00\x01hi", 4);
  e.payload_version = 2;
  e.metadata = {{"b", "2"}, {"a", "x\"/<\n\x01\xe2\x80\xa8"}, {"", "dropped"}};
  e.ordering_key = "customer-7";
  e.created_at = parse_time("2026-07-15T12:00:00.12+02:00");
  const std::string pinned =
      "{\"id\":\"0190f1a2-0000-7000-8000-000000000001\",\"topic\":\"orders.created\",\"payload\":\"AAFoaQ==\","
      "\"payload_version\":2,\"metadata\":{\"a\":\"x\\\"/<\\n\\u0001\xe2\x80\xa8\",\"b\":\"2\"},"
      "\"ordering_key\":\"customer-7\",\"idempotency_key\":\"\",\"created_at\":\"2026-07-15T10:00:00.120000Z\"}";
  EXPECT_EQ(canonical_json(e), pinned);
  const auto back = parse_canonical_json(pinned);
  EXPECT_EQ(back.id, e.id);
  EXPECT_EQ(back.payload, e.payload);
  EXPECT_EQ(*back.created_at, *e.created_at);
  EXPECT_EQ(canonical_json(back), pinned);
  ::unsetenv("TZ");
  ::tzset();
  envelope unset = e;
  unset.created_at.reset();
  EXPECT_OUTBOX_ERROR((void)canonical_json(unset), errc::invalid_argument, "created_at_required");
}

TEST(outbox_envelope, each_validation_rule_fails_with_its_reason_and_the_earlier_rule_wins) {
  struct rule {
    const char* reason;
    std::function<void(envelope&)> breaks;
  };
  const std::vector<rule> rules = {
      {"id_required", [](envelope& e) { e.id.clear(); }},
      {"id_too_large", [](envelope& e) { e.id = std::string(256, 'i'); }},
      {"payload_version_required", [](envelope& e) { e.payload_version = 0; }},
      {"counters_not_zero", [](envelope& e) { e.claim_count = 1; }},
      {"timestamp_out_of_range", [](envelope& e) { e.created_at = max_time() + std::chrono::microseconds(1); }},
      {"topic_required", [](envelope& e) { e.topic.clear(); }},
      {"topic_too_large", [](envelope& e) { e.topic = std::string(256, 't'); }},
      {"payload_too_large", [](envelope& e) { e.payload = std::string(1'048'577, 'p'); }},
      {"metadata_entries_too_large",
       [](envelope& e) {
         for (int i = 0; i < 65; ++i) e.metadata[std::to_string(i)] = "";
       }},
      {"metadata_too_large", [](envelope& e) { e.metadata["k"] = std::string(16'384, 'v'); }},
      {"ordering_key_too_large", [](envelope& e) { e.ordering_key = std::string(256, 'k'); }},
      {"idempotency_key_too_large", [](envelope& e) { e.idempotency_key = std::string(256, 'k'); }},
      {"invalid_encoding", [](envelope& e) { e.topic = "bad\xc0\xaf"; }},
  };
  for (std::size_t i = 0; i < rules.size(); ++i) {
    envelope e = valid();
    rules[i].breaks(e);
    EXPECT_OUTBOX_ERROR(validate_for_insert(e), errc::invalid_argument, rules[i].reason);
    if (i + 1 < rules.size()) {  // two broken rules: the earlier reports
      envelope two = valid();
      rules[i + 1].breaks(two);
      rules[i].breaks(two);
      EXPECT_OUTBOX_ERROR(validate_for_insert(two), errc::invalid_argument, rules[i].reason);
    }
  }
  limits bad;
  bad.max_topic_bytes = 256;
  EXPECT_OUTBOX_ERROR(validate_for_insert(valid(), bad), errc::invalid_argument, "invalid_limits");
  bad.max_topic_bytes = 0;
  EXPECT_OUTBOX_ERROR((void)envelope_builder(bad), errc::invalid_argument, "invalid_limits");
}

TEST(outbox_envelope, exact_limits_pass_and_one_byte_more_fails) {
  envelope e = valid();
  e.id = std::string(255, 'i');
  e.topic = std::string(255, 't');
  e.payload = std::string(1'048'576, 'p');
  e.ordering_key = std::string(255, 'k');
  e.idempotency_key = std::string(255, 'k');
  e.metadata["k"] = std::string(16'383, 'v');
  e.available_at = max_time();
  e.created_at = min_time();
  EXPECT_NO_THROW(validate_for_insert(e));
  e.metadata["k"] += "v";
  EXPECT_OUTBOX_ERROR(validate_for_insert(e), errc::invalid_argument, "metadata_too_large");
}

TEST(outbox_envelope, a_generator_returning_empty_or_throwing_fails_as_specified) {
  envelope_params p;
  p.topic = "t";
  EXPECT_OUTBOX_ERROR((void)envelope_builder({}, [] { return std::string(); }).build(p), errc::invalid_argument,
                      "id_required");
  try {
    (void)envelope_builder({}, []() -> std::string { throw std::runtime_error("rng down"); }).build(p);
    ADD_FAILURE() << "no error";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.reason(), "id_generation_failed");
    EXPECT_THROW(std::rethrow_if_nested(e), std::runtime_error);
  }
}

TEST(outbox_envelope, error_text_is_redacted_cleaned_and_cut_on_a_code_point_boundary) {
  std::string msg = "POST https://user:s3cret@hooks.example/x failed\x01\n";
  msg += std::string(5000, 'x');
  msg.insert(60, "\xe2\x82\xac\xff");
  const auto out = outbox::detail::sanitize_error_text(msg, 1024);
  EXPECT_LE(out.size(), 1024u);
  EXPECT_EQ(out.find("s3cret"), std::string::npos);
  EXPECT_NE(out.find("https://***@hooks.example"), std::string::npos);
  EXPECT_EQ(out.find('\n'), std::string::npos);
  EXPECT_TRUE(outbox::detail::valid_utf8(out));
  EXPECT_EQ(out.substr(out.size() - 3), "\xe2\x80\xa6");
}

TEST(outbox_envelope, bad_identifiers_are_invalid_identifier_and_a_table_is_at_most_50_bytes) {
  auto bad = [](outbox_config c) { EXPECT_OUTBOX_ERROR(validate(c), errc::invalid_argument, "invalid_identifier"); };
  bad({.table = "Outbox"});
  bad({.table = "1outbox"});
  bad({.table = "pg_outbox"});
  bad({.table = std::string(51, 'a')});
  bad({.schema = "a-b"});
  bad({.audit_table = "sqlite_x"});
  EXPECT_NO_THROW(validate({.table = std::string(50, 'a')}));
  EXPECT_NO_THROW(validate({.table = "order"}));
}

}  // namespace
}  // namespace spool::test
