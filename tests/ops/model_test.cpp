// The op model without a database (op-queue.md §3): times, JSON form,
// statuses, option validation.
#include <unistd.h>

#include <filesystem>

#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

using ops::parse_time;

TEST(ops_model, TimesParseEveryRfc3339OffsetToTheSameInstant) {
  const auto utc = parse_time("2024-05-01T12:00:00Z");
  EXPECT_EQ(parse_time("2024-05-01T15:00:00+03:00"), utc);
  EXPECT_EQ(parse_time("2024-05-01T07:00:00-05:00"), utc);
  EXPECT_EQ(parse_time("2024-05-01 12:00:00"), utc) << "canonical SQLite text is UTC";
  EXPECT_EQ(parse_time("2024-05-01t12:00:00z"), utc);
  EXPECT_EQ(parse_time("2024-05-01T15:00:00+0300"), utc);
  EXPECT_EQ(parse_time("2024-05-01T12:00:00.123456789Z"), utc + std::chrono::microseconds(123456));
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(utc.time_since_epoch()).count(), 1714564800);
}

TEST(ops_model, MalformedTimesAreInvalidArgument) {
  for (const char* bad : {"", "yesterday", "2024-05-01", "2024-13-01T00:00:00Z", "2024-02-30T00:00:00Z",
                          "2024-05-01T24:00:00Z", "2024-05-01T12:00:00.Z", "2024-05-01T12:00:00+3",
                          "2024-05-01 15:00:00.5 +0300 MSK"}) {
    EXPECT_ERRC((void)parse_time(bad), errc::invalid_argument);
  }
}

TEST(ops_model, TimesFormatAsUtcWithZAndAFractionOnlyWhenThereIsOne) {
  const auto t = parse_time("2024-05-01T12:00:00Z");
  EXPECT_EQ(ops::format_time(t), "2024-05-01T12:00:00Z");
  EXPECT_EQ(ops::format_time(t + std::chrono::microseconds(500000)), "2024-05-01T12:00:00.5Z");
  EXPECT_EQ(ops::format_time(t + std::chrono::microseconds(1)), "2024-05-01T12:00:00.000001Z");
}

TEST(ops_model, FormattingIgnoresTheProcessTimeZone) {
  scoped_tz tz("Etc/GMT-3", 3 * 3600);
  ASSERT_TRUE(tz.took_effect());
  EXPECT_EQ(ops::format_time(parse_time("2024-05-01T15:00:00+03:00")), "2024-05-01T12:00:00Z");
}

TEST(ops_model, TheJsonFormKeepsFilexKeysOmitsAbsentFieldsAndNeverTheToken) {
  ops::op o;
  o.id = "abc";
  o.type = "thumb";
  o.payload = {{"n", 1}};
  o.status = ops::op_status::running;
  o.status_text = "running";
  o.attempts = 1;
  o.enqueued_at = parse_time("2024-05-01T12:00:00Z");
  o.started_at = parse_time("2024-05-01T12:00:01Z");
  o.lease_owner = "host:1:deadbeef";
  o.lease_token = "secret";
  const auto j = ops::to_json(o);
  EXPECT_EQ(j, nlohmann::json::parse(R"({"id":"abc","type":"thumb","payload":{"n":1},"status":"running",
      "priority":0,"attempts":1,"max_attempts":3,"enqueued_at":"2024-05-01T12:00:00Z",
      "started_at":"2024-05-01T12:00:01Z","lease_owner":"host:1:deadbeef"})"));
  EXPECT_FALSE(j.contains("lease_token"));
  EXPECT_FALSE(j.contains("last_error"));
  const auto back = ops::op_from_json(j);
  EXPECT_EQ(back.id, "abc");
  EXPECT_EQ(back.started_at, o.started_at);
  EXPECT_EQ(back.status, ops::op_status::running);
  EXPECT_FALSE(back.lease_token);
  EXPECT_ERRC((void)ops::op_from_json(nlohmann::json::parse(R"({"id":"x"})")), errc::invalid_argument);
}

TEST(ops_model, StatusNamesRoundTripAndOthersAreUnknown) {
  for (auto s : {ops::op_status::pending, ops::op_status::running, ops::op_status::done, ops::op_status::failed,
                 ops::op_status::cancelled}) {
    EXPECT_EQ(ops::parse_status(ops::to_string(s)), s);
  }
  EXPECT_EQ(ops::parse_status("PENDING"), ops::op_status::unknown);
}

TEST(ops_model, TheDefaultOwnerIsHostPidAndEightHexDigits) {
  const auto owner = ops::default_owner();
  const auto last = owner.rfind(':');
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(owner.size() - last - 1, 8u);
  EXPECT_NE(owner.find(":" + std::to_string(::getpid()) + ":"), std::string::npos) << owner;
  EXPECT_NE(ops::default_owner(), owner);
}

TEST(ops_model, OptionsAreValidatedBeforeAnythingConnects) {
  temp_dir dir;
  auto db = database::open(dir.sqlite_uri());
  EXPECT_ERRC(ops::queue(db, {.table = ""}), errc::invalid_argument);
  EXPECT_ERRC(ops::queue(db, {.notify_channel = "Bad-Channel"}), errc::invalid_argument);
  EXPECT_ERRC(ops::queue(db, {.owner = std::string(256, 'o')}), errc::invalid_argument);
  EXPECT_ERRC(ops::queue(db, {.max_payload_bytes = 0}), errc::invalid_argument);
  EXPECT_ERRC(ops::queue(db, {.call_timeout = std::chrono::milliseconds(0)}), errc::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "spool.db")) << "nothing was opened";
}

}  // namespace
}  // namespace spool::test
