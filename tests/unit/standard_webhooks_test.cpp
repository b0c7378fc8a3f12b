// Standard Webhooks signing and verification (spool/outbox/webhook.hpp),
// issue 18: what a receiver uses to refuse forged, stale and replayed requests.
#include <gtest/gtest.h>

#include <chrono>

#include "spool/error.hpp"
#include "spool/outbox/webhook.hpp"

namespace {

using namespace spool::outbox;
using std::chrono::seconds;
using std::chrono::system_clock;

// The example of the Standard Webhooks specification; its signature was
// computed apart from Spool, with `openssl dgst -sha256 -mac HMAC`.
constexpr const char* spec_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* spec_id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr std::int64_t spec_ts = 1614265330;
constexpr const char* spec_body = R"({"test": 2432232314})";
constexpr const char* spec_signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

system_clock::time_point at(std::int64_t s) { return system_clock::time_point(seconds(s)); }

// A request's header values and body, owned (webhook_request only views them).
struct owned_request {
  std::string id, timestamp, signature, body;
  [[nodiscard]] webhook_request view() const { return {id, timestamp, signature, body}; }
};

owned_request request(const std::string& ts, const std::string& sig, const char* body = spec_body) {
  return {spec_id, ts, sig, body};
}

TEST(standard_webhooks, the_signature_matches_the_specifications_example) {
  EXPECT_EQ(standard_webhook_signature({spec_secret}, spec_id, spec_ts, spec_body), spec_signature);
  EXPECT_EQ(verify_standard_webhook(request("1614265330", spec_signature).view(), {spec_secret}, seconds(300),
                                    at(spec_ts + 10)),
            webhook_verdict::valid);
}

TEST(standard_webhooks, two_secrets_sign_twice_and_a_receiver_holding_either_one_accepts) {
  const std::string other = "a plain secret, used as its own bytes";
  const auto both = standard_webhook_signature({other, spec_secret}, spec_id, spec_ts, spec_body);
  EXPECT_EQ(both.find(' '), both.rfind(' '));  // two entries
  EXPECT_NE(both.find(spec_signature), std::string::npos) << both;
  const auto r = request(std::to_string(spec_ts), both);
  EXPECT_EQ(verify_standard_webhook(r.view(), {spec_secret}, seconds(300), at(spec_ts)),
            webhook_verdict::valid);
  EXPECT_EQ(verify_standard_webhook(r.view(), {other}, seconds(300), at(spec_ts)), webhook_verdict::valid);
  EXPECT_EQ(verify_standard_webhook(r.view(),
                                    {"whsec_"
                                     "c29tZXRoaW5nIGVsc2U="},
                                    seconds(300), at(spec_ts)),
            webhook_verdict::bad_signature);
}

TEST(standard_webhooks, a_changed_body_id_or_timestamp_or_an_unknown_version_is_a_bad_signature) {
  const auto ts = std::to_string(spec_ts);
  const auto now = at(spec_ts);
  EXPECT_EQ(verify_standard_webhook(request(ts, spec_signature, R"({"test": 2432232315})").view(),
                                    {spec_secret}, seconds(300), now),
            webhook_verdict::bad_signature);
  EXPECT_EQ(verify_standard_webhook(owned_request{"msg_other", ts, spec_signature, spec_body}.view(),
                                    {spec_secret}, seconds(300), now),
            webhook_verdict::bad_signature);
  EXPECT_EQ(verify_standard_webhook(request(std::to_string(spec_ts + 1), spec_signature).view(),
                                    {spec_secret}, seconds(300), now),
            webhook_verdict::bad_signature);
  std::string v2 = spec_signature;
  v2[1] = '2';
  EXPECT_EQ(verify_standard_webhook(request(ts, v2).view(), {spec_secret}, seconds(300), now),
            webhook_verdict::bad_signature);
  EXPECT_EQ(verify_standard_webhook(request(ts, "v1,not base64!").view(), {spec_secret}, seconds(300), now),
            webhook_verdict::bad_signature);
}

TEST(standard_webhooks, a_timestamp_beyond_the_tolerance_either_way_is_stale_and_a_malformed_one_refused) {
  const auto r = request(std::to_string(spec_ts), spec_signature);
  EXPECT_EQ(verify_standard_webhook(r.view(), {spec_secret}, seconds(300), at(spec_ts + 300)),
            webhook_verdict::valid);
  EXPECT_EQ(verify_standard_webhook(r.view(), {spec_secret}, seconds(300), at(spec_ts + 301)),
            webhook_verdict::stale);
  EXPECT_EQ(verify_standard_webhook(r.view(), {spec_secret}, seconds(300), at(spec_ts - 301)),
            webhook_verdict::stale);
  for (const char* ts : {"", "16142653x0", "1e9", "-", "99999999999999999999999"}) {
    const auto v =
        verify_standard_webhook(request(ts, spec_signature).view(), {spec_secret}, seconds(300), at(spec_ts));
    EXPECT_TRUE(v == webhook_verdict::malformed_timestamp || v == webhook_verdict::missing_header) << ts;
  }
  EXPECT_EQ(verify_standard_webhook(request(std::to_string(spec_ts), "").view(), {spec_secret}, seconds(300),
                                    at(spec_ts)),
            webhook_verdict::missing_header);
  EXPECT_EQ(to_string(webhook_verdict::stale), "stale");
}

TEST(standard_webhooks, no_empty_or_malformed_secret_is_accepted) {
  for (const std::vector<std::string>& secrets :
       {std::vector<std::string>{}, {""}, {"whsec_"}, {"whsec_not base64"}, {spec_secret, ""}}) {
    try {
      (void)standard_webhook_signature(secrets, "id", 1, "b");
      ADD_FAILURE() << "accepted " << secrets.size() << " secrets";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), spool::errc::invalid_argument);
      EXPECT_EQ(e.reason(), "invalid_config");
      EXPECT_EQ(std::string(e.what()).find("MfKQ9"), std::string::npos) << "a secret in the message";
    }
  }
}

TEST(standard_webhooks, the_replay_guard_refuses_an_id_inside_the_window_and_forgets_it_after) {
  webhook_replay_guard guard(seconds(300));
  const auto now = at(spec_ts);
  EXPECT_FALSE(guard.seen(spec_id, now));
  guard.remember(spec_id, spec_ts, now);
  EXPECT_TRUE(guard.seen(spec_id, now));
  EXPECT_TRUE(guard.seen(spec_id, at(spec_ts + 300)));  // a replay still inside the window
  EXPECT_FALSE(guard.seen("msg_other", now));
  // Past the window the request is stale for verify_standard_webhook, so the guard lets the id go.
  EXPECT_FALSE(guard.seen(spec_id, at(spec_ts + 301)));
  EXPECT_EQ(guard.size(), 0u);
  // A timestamp from the future is kept only as long as the window allows.
  guard.remember("far", std::numeric_limits<std::int64_t>::max(), now);
  EXPECT_TRUE(guard.seen("far", at(spec_ts + 600)));
  EXPECT_FALSE(guard.seen("far", at(spec_ts + 601)));
}

}  // namespace
