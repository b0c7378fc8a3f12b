// The one RFC 3339 parser and formatter (src/common/rfc3339.hpp) behind the
// op queue's and the outbox's times, with the dialect choices their specs make.
#include "common/text/rfc3339.hpp"

#include <gtest/gtest.h>

namespace spool::detail {
namespace {

using namespace std::chrono;

const micros_time noon = micros_time{sys_days{year{2024} / 5 / 1} + hours{12}};

TEST(rfc3339, the_strict_form_reads_zulu_and_colon_offsets_and_truncates_finer_digits) {
  EXPECT_EQ(parse_rfc3339("2024-05-01T12:00:00Z"), noon);
  EXPECT_EQ(parse_rfc3339("2024-05-01t12:00:00z"), noon);
  EXPECT_EQ(parse_rfc3339("2024-05-01 15:00:00+03:00"), noon);
  EXPECT_EQ(parse_rfc3339("2024-05-01T07:30:00-04:30"), noon);
  EXPECT_EQ(parse_rfc3339("2024-05-01T12:00:00.1234569Z"), noon + microseconds{123456});
  EXPECT_EQ(parse_rfc3339("2024-05-01T12:00:00.5Z"), noon + milliseconds{500});
}

TEST(rfc3339, the_strict_form_refuses_what_the_dialects_allow_and_every_malformed_field) {
  for (const char* bad : {"2024-05-01T12:00:00", "2024-05-01T15:00:00+0300", "2024-05-01T12:00:60Z",
                          "2024-02-30T12:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z",
                          "2024-05-01T12:00:00.Z", "2024-05-01T12:00:00Zx", "2024-05-01T12:00:00+24:00",
                          "2024-05-01X12:00:00Z", "2024-5-01T12:00:00Z", "", "garbage"}) {
    EXPECT_FALSE(parse_rfc3339(bad).has_value()) << bad;
  }
}

TEST(rfc3339, dialects_add_a_missing_zone_as_utc_compact_offsets_and_a_leap_second) {
  EXPECT_EQ(parse_rfc3339("2024-05-01 12:00:00", {.zone_optional = true}), noon);
  EXPECT_EQ(parse_rfc3339("2024-05-01T15:00:00+0300", {.compact_offset = true}), noon);
  EXPECT_EQ(parse_rfc3339("2024-05-01T11:59:60Z", {.leap_second = true}), noon - seconds{1});
}

TEST(rfc3339, the_formatter_writes_micros_trimmed_or_whole_seconds_with_the_chosen_separator) {
  const auto t = noon + microseconds{120000};
  EXPECT_EQ(format_rfc3339(t), "2024-05-01T12:00:00.120000Z");
  EXPECT_EQ(format_rfc3339(t, {rfc3339_style::fraction::trimmed, 'T', true}), "2024-05-01T12:00:00.12Z");
  EXPECT_EQ(format_rfc3339(noon, {rfc3339_style::fraction::trimmed, 'T', true}), "2024-05-01T12:00:00Z");
  EXPECT_EQ(format_rfc3339(t, {rfc3339_style::fraction::none, ' ', false}), "2024-05-01 12:00:00");
  const auto early = micros_time{sys_days{year{1} / 1 / 1}};
  EXPECT_EQ(format_rfc3339(early), "0001-01-01T00:00:00.000000Z");
  EXPECT_EQ(parse_rfc3339(format_rfc3339(early)), early);
}

}  // namespace
}  // namespace spool::detail
