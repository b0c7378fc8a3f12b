// Quarantine of unparseable rows (message-queue.md §5.2, scenarios 2–6, 13, 14, 23, 28, 41).
#include "conformance/mq_fixture.hpp"
#include "mq/store.hpp"
#include "support/log_capture.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_poison = mq_conformance;

TEST_P(mq_poison, a_non_json_payload_is_quarantined_verbatim_without_an_error) {
  auto q = make_queue();
  insert_raw("q", "bad-1", "{ this is not json");
  EXPECT_TRUE(q->poll(10).empty());
  EXPECT_EQ(count("queue_messages"), 0);
  const auto failed = rows("SELECT payload, error_message, receive_count FROM queue_messages_failed WHERE id = 'bad-1'");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(*failed[0][0], "{ this is not json");
  EXPECT_FALSE(failed[0][1]->empty());
  EXPECT_EQ(*failed[0][2], "1");
  EXPECT_TRUE(q->poll(10).empty());
}

TEST_P(mq_poison, the_latest_failure_wins_with_a_new_payload_and_error_text) {
  auto q = make_queue();
  insert_raw("q", "bad-repeat", "{ first attempt");
  EXPECT_TRUE(q->poll(1).empty());
  const auto first = *rows("SELECT error_message FROM queue_messages_failed").at(0).at(0);
  insert_raw("q", "bad-repeat", "{\"still\": broken}");
  EXPECT_TRUE(q->poll(1).empty());
  const auto failed = rows("SELECT payload, error_message FROM queue_messages_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(*failed[0][0], "{\"still\": broken}");
  EXPECT_NE(*failed[0][1], first);
}

TEST_P(mq_poison, one_poll_returns_both_good_messages_around_a_poison_row) {
  auto q = make_queue();
  const auto t = unix_now();
  q->publish(msg("good-1"));
  insert_raw("q", "bad-1", "not json at all", std::nullopt, t);
  q->publish(msg("good-2"));
  const auto got = q->poll(10);
  EXPECT_EQ(ids(got), (std::vector<std::string>{"good-1", "good-2"}));
  EXPECT_EQ(count("queue_messages_failed"), 1);
}

TEST_P(mq_poison, quarantining_the_same_id_again_is_idempotent) {
  auto q = make_queue();
  insert_raw("q", "x", "{");
  EXPECT_NO_THROW(EXPECT_TRUE(q->poll(5).empty()));
  insert_raw("q", "x", "{");
  EXPECT_NO_THROW(EXPECT_TRUE(q->poll(5).empty()));
  EXPECT_EQ(count("queue_messages"), 0);
  EXPECT_EQ(count("queue_messages_failed"), 1);
}

TEST_P(mq_poison, a_healthy_queue_delivers_and_quarantines_nothing) {
  auto q = make_queue();
  q->publish(msg("ok-1"));
  EXPECT_EQ(ids(q->poll(10)), std::vector<std::string>{"ok-1"});
  EXPECT_EQ(count("queue_messages_failed"), 0);
}

TEST_P(mq_poison, strict_mode_quarantines_each_violation_with_its_reason) {
  auto q = make_queue({.strict_validation = true});
  auto lenient = make_queue({.name = "lenient"});
  const auto t = unix_now();
  insert_raw("q", "empty-object", "{}", std::nullopt, t);
  insert_raw("q", "null", "null", std::nullopt, t);
  insert_raw("q", "no-target", R"({"id":"no-target","mediationType":"HTTP"})", std::nullopt, t);
  insert_raw("q", "smtp", R"({"id":"smtp","mediationType":"SMTP","mediationTarget":"x"})", std::nullopt, t);
  insert_raw("q", "row-id", R"({"id":"payload-id","mediationType":"HTTP","mediationTarget":"x"})", std::nullopt, t);
  EXPECT_TRUE(q->poll(10).empty());
  std::map<std::string, std::string> reasons;
  for (const auto& r : rows("SELECT id, error_message FROM queue_messages_failed")) reasons[*r[0]] = *r[1];
  EXPECT_EQ(reasons["empty-object"], "strict: empty id");
  EXPECT_EQ(reasons["null"], "strict: empty id");
  EXPECT_EQ(reasons["no-target"], "strict: empty mediationTarget");
  EXPECT_EQ(reasons["smtp"], "strict: unknown mediationType \"SMTP\"");
  EXPECT_EQ(reasons["row-id"], "strict: payload id \"payload-id\" differs from row id \"row-id\"");

  insert_raw("lenient", "a", "{}", std::nullopt, t);
  insert_raw("lenient", "b", "null", std::nullopt, t);
  const auto got = lenient->poll(10);
  EXPECT_EQ(ids(got), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(got.at(0).body, mq::message{});
}

namespace {

// Secrets planted in payloads below: none may reach an error text or a log line.
constexpr const char* kSecretPayloadFields = R"("authToken":"s3cr3t-TOKEN","signingSecret":"s1gn-SECRET")";

void expect_no_secret(const std::string& text) {
  EXPECT_EQ(text.find("s3cr3t"), std::string::npos) << text;
  EXPECT_EQ(text.find("s1gn-SECRET"), std::string::npos) << text;
}

bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

TEST_P(mq_poison, an_error_text_over_1000_bytes_is_stored_cut_to_1000_bytes_of_valid_utf8) {
  // No reason the queue builds today is that long (strict mode quotes at most
  // 64 bytes per value), so this drives the step every quarantine goes
  // through — cut, store, log — with a crafted reason, against the real table.
  const log_capture logs;
  auto st = is_pg() ? mq::detail::make_postgres_store(db_->impl(), "", false)
                    : mq::detail::make_sqlite_store(db_->impl());
  insert_raw("q", "m", std::string(R"({"id":"m",)") + kSecretPayloadFields + "}");
  const std::string poll_uuid = "0b6f2f4e-8f0a-4c1e-9a57-3f1f8e6c2d11";
  ASSERT_EQ(st->claim("q", poll_uuid, 1, 30, false, {}).size(), 1u);
  std::string reason = "reason: ";  // 8 bytes, then 3-byte characters: byte 1000 falls inside one
  for (int i = 0; i < 400; ++i) reason += "€";
  ASSERT_EQ(reason.size(), 1208u);

  mq::detail::quarantine_row(*st, "q", "q", "m", poll_uuid + ":m", reason);

  EXPECT_EQ(count("queue_messages"), 0);
  const auto text = *rows("SELECT error_message FROM queue_messages_failed WHERE id = 'm'").at(0).at(0);
  EXPECT_EQ(text.size(), 998u);  // 8 + 330 × 3: the character that would straddle byte 1000 is dropped
  EXPECT_EQ(text, reason.substr(0, text.size()));
  EXPECT_TRUE(is_valid_utf8(text));
  expect_no_secret(text);
  EXPECT_EQ(logs.lines_containing(text).size(), 1u) << "the WARN line carries the stored text";
  for (const auto& line : logs.lines()) expect_no_secret(line.text);
}

TEST_P(mq_poison,
       error_texts_quote_at_most_64_bytes_of_a_value_and_neither_they_nor_log_lines_hold_a_secret) {
  const log_capture logs;
  auto q = make_queue({.max_receive_count = 0});
  auto strict = make_queue({.name = "s", .strict_validation = true});
  std::string big;
  for (int i = 0; i < 600; ++i) big += "é";  // 1200 bytes
  insert_raw("s", "m",
             std::string(R"({"id":"m","mediationTarget":"x",)") + kSecretPayloadFields +
                 R"(,"mediationType":")" + big + "\"}");
  EXPECT_TRUE(strict->poll(1).empty());
  EXPECT_EQ(*rows("SELECT error_message FROM queue_messages_failed WHERE id = 'm'").at(0).at(0),
            "strict: unknown mediationType \"" + big.substr(0, 64) + "\"");

  const auto t = unix_now();
  insert_raw("q", "type-error", std::string("{") + kSecretPayloadFields + R"(,"id": 5})", std::nullopt, t);
  insert_raw("q", "syntax-error", std::string("{") + kSecretPayloadFields + " oops}", std::nullopt, t);
  EXPECT_TRUE(q->poll(10).empty());
  const auto failed = rows("SELECT error_message FROM queue_messages_failed");
  ASSERT_EQ(failed.size(), 3u);
  for (const auto& r : failed) expect_no_secret(*r[0]);

  std::size_t warnings = 0;
  for (const auto& line : logs.lines()) {
    expect_no_secret(line.text);
    if (line.level == spdlog::level::warn &&
        line.text.starts_with("malformed message moved to queue_messages_failed")) {
      ++warnings;
    }
  }
  EXPECT_EQ(warnings, 3u) << "one WARN per quarantined row, so the log check above saw them";
}

TEST_P(mq_poison, a_quarantined_row_never_blocks_its_group) {
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("q", "a-bad", "{oops", std::string("g"), t);
  insert_raw("q", "b-good", R"({"id":"b-good"})", std::string("g"), t);
  EXPECT_TRUE(q->poll(10).empty());  // the head was claimed and quarantined
  EXPECT_EQ(ids(q->poll(10)), std::vector<std::string>{"b-good"});
  EXPECT_EQ(*rows("SELECT receive_count FROM queue_messages_failed WHERE id = 'a-bad'").at(0).at(0), "1");
}

TEST_P(mq_poison, a_poison_row_is_quarantined_while_a_healthy_one_still_delivers_and_the_latest_failure_wins) {
  auto q = make_queue({.strict_validation = true});
  const auto t = unix_now();
  insert_raw("q", "p", "{nope", std::nullopt, t);
  insert_raw("q", "h", R"({"id":"h","mediationType":"HTTP","mediationTarget":"https://x"})", std::nullopt, t);
  EXPECT_EQ(ids(q->poll(10)), std::vector<std::string>{"h"});
  insert_raw("q", "p", "{}", std::nullopt, t);
  EXPECT_TRUE(q->poll(10).empty());
  const auto failed = rows("SELECT payload, error_message FROM queue_messages_failed WHERE id = 'p'");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(*failed[0][0], "{}");
  EXPECT_EQ(*failed[0][1], "strict: empty id");
}

TEST_P(mq_poison, a_failing_quarantine_leaves_the_row_claimed_and_the_poll_still_returns_good_messages) {
  if (is_pg()) {
    rows("CREATE FUNCTION reject_failed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'rejected by "
         "test'; END $$");
    rows("CREATE TRIGGER reject BEFORE INSERT ON queue_messages_failed FOR EACH ROW EXECUTE FUNCTION reject_failed()");
  } else {
    rows("CREATE TRIGGER reject BEFORE INSERT ON queue_messages_failed BEGIN SELECT RAISE(ABORT, 'rejected by test'); "
         "END");
  }
  auto q = make_queue();
  const auto t = unix_now();
  insert_raw("q", "bad", "{broken", std::nullopt, t);
  insert_raw("q", "good", R"({"id":"good"})", std::nullopt, t);
  const log_capture logs;
  std::vector<mq::delivered_message> got;
  EXPECT_NO_THROW(got = q->poll(10));
  EXPECT_EQ(ids(got), std::vector<std::string>{"good"});
  EXPECT_EQ(count("queue_messages", "id = 'bad' AND receipt_handle IS NOT NULL"), 1);
  EXPECT_EQ(count("queue_messages_failed"), 0);
  std::vector<std::string> warnings;
  for (const auto& line : logs.lines()) {
    if (line.level == spdlog::level::warn) warnings.push_back(line.text);
  }
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(
      warnings[0].starts_with("could not quarantine malformed message (queue q, message id bad, error "))
      << warnings[0];
  EXPECT_NE(warnings[0].find("rejected by test"), std::string::npos) << warnings[0];
}

SPOOL_BOTH_ENGINES(mq_poison);

}  // namespace spool::test
