// The HTTP webhook sink (outbox.md §8) against a real receiver on
// 127.0.0.1 (cpp-httplib's server in this process, HTTP and HTTPS with a
// certificate made at test time), alone and behind a relay, on both engines.
// No timing assertions: waits end on states and recorded requests.
#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "outbox_fixture.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/webhook.hpp"
#include "support/eventually.hpp"
#include "support/webhook_receiver.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

constexpr const char* secret = "s3cr3t-key";

class outbox_http_sink : public outbox_conformance {
 protected:
  void SetUp() override {
    outbox_conformance::SetUp();
    st_.emplace(*db_);
  }
  http_sink_options options(const std::string& url) const {
    http_sink_options o;
    o.url = url;
    o.secret = secret;
    return o;
  }
  claimed_message one(const std::string& id = "m1") {
    auto e = env(id, "orders", "k");
    e.payload = "{\"total\":42,\"note\":\"caf\xc3\xa9\"}";
    write({e});
    auto c = st_->claim("http-test", 1, std::chrono::seconds(30));
    EXPECT_EQ(c.size(), 1u);
    return c.at(0);
  }
  // Short leases and backoff scaled down, as in relay_test.cpp.
  static relay_options fast() {
    relay_options o;
    o.owner = "http-relay-test";
    o.max_in_flight = 4;
    o.lease_duration = std::chrono::seconds(10);
    o.poll_interval = std::chrono::milliseconds(10);
    o.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(1)};
    o.shutdown_grace = std::chrono::seconds(30);
    return o;
  }
  std::string column(const std::string& id, const std::string& col) {
    const auto r =
        db_->exec("SELECT " + col + " FROM outbox_messages WHERE id = " + (is_pg() ? "$1" : "?1"), {id});
    return r.empty() || !r[0][0] ? "" : *r[0][0];
  }

  temp_dir tmp_;
  std::optional<store> st_;
};

TEST_P(outbox_http_sink,
       a_2xx_delivers_the_canonical_json_with_its_headers_and_a_signature_the_receiver_can_verify) {
  webhook_receiver receiver;
  auto o = options(receiver.url("/hooks/orders?tenant=7"));
  o.headers = {{"Authorization", "Bearer abc"}};
  auto s = make_http_sink(o);
  const auto m = one();
  for (const int status : {200, 204}) {
    receiver.answer(status);
    const auto out = s->publish(m, {});
    EXPECT_EQ(out.kind, outcome_class::delivered) << status << " " << out.code << " " << out.message;
  }
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 2u);
  const auto& r = got[0];
  EXPECT_EQ(r.path, "/hooks/orders");
  EXPECT_EQ(r.body, canonical_json(m.message));  // the exact bytes
  EXPECT_EQ(nlohmann::json::parse(r.body).at("id"), "m1");
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  EXPECT_EQ(r.header("Idempotency-Key"), "m1");
  EXPECT_EQ(r.header("X-Spool-Topic"), "orders");
  EXPECT_EQ(r.header("X-Spool-Claim-Count"), "1");
  EXPECT_EQ(r.header("X-Spool-Failure-Count"), "0");
  EXPECT_EQ(r.header("Authorization"), "Bearer abc");
  EXPECT_EQ(r.header("User-Agent"), "spool-outbox-relay");
  EXPECT_EQ(r.header("X-Spool-Signature"), expected_signature(secret, r.body));
  EXPECT_NE(r.header("X-Spool-Signature"), expected_signature("another key", r.body));
  EXPECT_EQ(got[1].body, r.body);  // a redelivery carries the same bytes and key
  EXPECT_EQ(got[1].header("Idempotency-Key"), "m1");
}

// Standard Webhooks (issue 18): with two secrets (a rotation), the receiver
// verifies each request with either one through the library, and refuses a
// stale request and a replay of an id it already acted on.
TEST_P(outbox_http_sink,
       standard_webhooks_headers_verify_with_either_rotated_secret_and_replays_are_refused) {
  webhook_receiver receiver;
  auto o = options(receiver.url());
  const std::string old_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                    new_secret = "whsec_c3Bvb2wgbmV3IGtleQ==";
  o.standard_webhook_secrets = {new_secret, old_secret};
  auto s = make_http_sink(o);
  const auto m = one();
  receiver.answer(200);
  receiver.answer(200);
  ASSERT_EQ(s->publish(m, {}).kind, outcome_class::delivered);
  ASSERT_EQ(s->publish(m, {}).kind, outcome_class::delivered);  // a redelivery
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 2u);
  const auto& r = got[0];
  EXPECT_EQ(r.header("webhook-id"), "m1");
  EXPECT_EQ(r.header("X-Spool-Signature"), expected_signature(secret, r.body));  // still sent
  const std::string id = r.header("webhook-id"), ts = r.header("webhook-timestamp"),
                    sig = r.header("webhook-signature");
  const webhook_request req{id, ts, sig, r.body};  // views of these
  const auto now = std::chrono::system_clock::now();
  EXPECT_LE(std::abs(std::stoll(std::string(req.timestamp)) -
                     std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()),
            5);
  EXPECT_EQ(verify_standard_webhook(req, {old_secret}), webhook_verdict::valid);
  EXPECT_EQ(verify_standard_webhook(req, {new_secret}), webhook_verdict::valid);
  EXPECT_EQ(verify_standard_webhook(req, {"whsec_b3RoZXI="}), webhook_verdict::bad_signature);
  // Replayed ten minutes later, the same bytes are stale.
  EXPECT_EQ(
      verify_standard_webhook(req, {old_secret}, std::chrono::minutes(5), now + std::chrono::minutes(10)),
      webhook_verdict::stale);
  // Inside the window, the replay guard tells a repeat of an id already acted on.
  webhook_replay_guard guard;
  EXPECT_FALSE(guard.seen(req.id));
  guard.remember(req.id, std::stoll(std::string(req.timestamp)));
  const auto& again = got[1];
  EXPECT_EQ(verify_standard_webhook({again.header("webhook-id"), again.header("webhook-timestamp"),
                                     again.header("webhook-signature"), again.body},
                                    {new_secret}),
            webhook_verdict::valid);
  EXPECT_TRUE(guard.seen(again.header("webhook-id")));
  // A user header cannot stand in for the sink's own, and a bad secret fails at construction.
  auto bad = options(receiver.url());
  bad.headers = {{"Webhook-Signature", "v1,forged"}};
  EXPECT_OUTBOX_ERROR((void)make_http_sink(bad), errc::invalid_argument, "invalid_config");
  bad = options(receiver.url());
  bad.standard_webhook_secrets = {"whsec_%%%"};
  EXPECT_OUTBOX_ERROR((void)make_http_sink(bad), errc::invalid_argument, "invalid_config");
}

TEST_P(outbox_http_sink, a_4xx_other_than_408_and_429_dead_letters_at_once_with_only_the_status_as_message) {
  webhook_receiver receiver;
  auto s = make_http_sink(options(receiver.url()));
  auto o = fast();
  o.max_attempts = 10;
  relay r(*st_, s, o);
  int n = 0;
  for (const int status : {400, 404, 422}) {
    const std::string id = "p" + std::to_string(n++);
    write({env(id)});
    receiver.answer({{status, {}, "the body says " + std::string(secret), false}});
    EXPECT_EQ(r.run_once(), 1u);
    EXPECT_EQ(state_of(id), "dead") << status;
    EXPECT_EQ(column(id, "failure_count"), "1") << status;  // one failure, not max_attempts
    EXPECT_EQ(column(id, "last_error_code"), "http_" + std::to_string(status));
  }
  EXPECT_EQ(column("p1", "last_error"), "404 Not Found");
  EXPECT_EQ(column("p2", "last_error"), "422 Unprocessable Entity");
  EXPECT_EQ(r.metrics().dead_lettered, 3u);
  EXPECT_EQ(receiver.requests().size(), 3u);
}

TEST_P(outbox_http_sink, a_5xx_408_or_429_is_retried_and_the_row_delivered_once_the_receiver_recovers) {
  webhook_receiver receiver;
  receiver.answer({{500}, {503}, {408}, {429}, {502}, {200}});
  write({env("t1")});
  auto o = fast();
  o.max_attempts = 10;
  o.breaker.failures = 10;  // this test is about retries, not the breaker
  relay r(*st_, make_http_sink(options(receiver.url())), o);
  std::vector<std::string> codes;
  while (state_of("t1") == "pending" && codes.size() < 6) {
    ASSERT_TRUE(eventually([&] { return r.run_once() > 0; }));
    if (state_of("t1") == "pending") codes.push_back(column("t1", "last_error_code"));
  }
  EXPECT_EQ(state_of("t1"), "delivered");
  EXPECT_EQ(codes, (std::vector<std::string>{"http_500", "http_503", "http_408", "http_429", "http_502"}));
  EXPECT_EQ(r.metrics().retried, 5u);
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[5].header("X-Spool-Failure-Count"), "5");
  EXPECT_EQ(got[5].header("X-Spool-Claim-Count"), "6");
  EXPECT_EQ(got[5].header("Idempotency-Key"), "t1");
}

TEST_P(outbox_http_sink, retry_after_in_seconds_or_as_an_http_date_becomes_the_outcomes_retry_after) {
  webhook_receiver receiver;
  auto s = make_http_sink(options(receiver.url()));
  const auto m = one();
  receiver.answer(429, {{"Retry-After", "120"}});
  auto out = s->publish(m, {});
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "http_429");
  EXPECT_EQ(out.message, "429 Too Many Requests");
  EXPECT_EQ(out.retry_after, std::chrono::milliseconds(120000));

  // An HTTP date an hour ahead: a delay of at most an hour, more than 50 minutes.
  const std::time_t later = std::time(nullptr) + 3600;
  std::tm tm{};
  gmtime_r(&later, &tm);
  char date[64];
  std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  receiver.answer(503, {{"Retry-After", date}});
  out = s->publish(m, {});
  EXPECT_EQ(out.code, "http_503");
  ASSERT_TRUE(out.retry_after.has_value()) << date;
  EXPECT_LE(*out.retry_after, std::chrono::hours(1));
  EXPECT_GT(*out.retry_after, std::chrono::minutes(50));

  // Dates past the clock's range (a hostile or broken receiver) are the one-day cap.
  for (const char* far : {"Wed, 21 Oct 6026 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"}) {
    receiver.answer(503, {{"Retry-After", far}});
    EXPECT_EQ(s->publish(m, {}).retry_after, std::chrono::milliseconds(std::chrono::hours(24))) << far;
  }
  receiver.answer(503, {{"Retry-After", "soon"}});
  EXPECT_EQ(s->publish(m, {}).retry_after, std::nullopt);
  receiver.answer(500);
  EXPECT_EQ(s->publish(m, {}).retry_after, std::nullopt);
}

TEST_P(outbox_http_sink, a_retry_after_from_the_receiver_postpones_the_row_through_the_relay) {
  webhook_receiver receiver;
  receiver.answer(429, {{"Retry-After", "3600"}});
  write({env("ra")});
  relay r(*st_, make_http_sink(options(receiver.url())), fast());
  EXPECT_EQ(r.run_once(), 1u);
  EXPECT_EQ(state_of("ra"), "pending");
  EXPECT_EQ(r.run_once(), 0u);  // not claimable: postponed an hour, not by the 1 ms backoff
  EXPECT_EQ(receiver.requests().size(), 1u);
}

TEST_P(outbox_http_sink, a_redirect_is_not_followed_and_is_transient) {
  webhook_receiver receiver;
  receiver.answer(307, {{"Location", receiver.url("/elsewhere")}});
  const auto out = make_http_sink(options(receiver.url()))->publish(one(), {});
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "http_307");
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/hook");
}

TEST_P(outbox_http_sink,
       a_receiver_outage_opens_the_breaker_dead_letters_nothing_and_all_is_delivered_after_it) {
  webhook_receiver receiver;
  const std::string url = receiver.url();
  receiver.stop();  // connections refused from here on
  std::vector<envelope> rows;
  for (int i = 0; i < 5; ++i) rows.push_back(env("u" + std::to_string(i)));
  write(rows);
  // The defaults scaled by 1/3600 (relay_test.cpp's hour of outage).
  auto o = fast();
  o.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(167)};    // 1 s, 10 min
  o.breaker = {5, std::chrono::milliseconds(1), std::chrono::milliseconds(83)};  // 5 s, 5 min
  std::atomic<int> refused{0};
  auto http = make_http_sink(options(url));
  // Counts the sink's outcomes without changing them.
  auto counting = make_callback_sink([&](const claimed_message& m, std::stop_token stop) {
    auto out = http->publish(m, std::move(stop));
    if (out.code == "http_connect") ++refused;
    return out;
  });
  relay r(*st_, counting, o);
  r.start();
  ASSERT_TRUE(eventually([&] { return r.metrics().breaker != breaker_state::closed; }));
  ASSERT_TRUE(eventually([&] { return refused >= 5; }));
  EXPECT_EQ(count("state = 'dead'"), 0);
  EXPECT_EQ(count("state = 'delivered'"), 0);
  receiver.start();  // the same port
  ASSERT_TRUE(eventually([&] { return count("state = 'delivered'") == 5; }));
  r.stop();
  EXPECT_EQ(count("state = 'dead'"), 0);
  EXPECT_EQ(r.metrics().dead_lettered, 0u);
  EXPECT_EQ(r.metrics().breaker, breaker_state::closed);
  std::set<std::string> keys;
  for (const auto& q : receiver.requests()) keys.insert(q.header("Idempotency-Key"));
  EXPECT_EQ(keys, (std::set<std::string>{"u0", "u1", "u2", "u3", "u4"}));
}

TEST_P(outbox_http_sink, a_receiver_slower_than_the_read_timeout_is_a_transient_failure) {
  webhook_receiver receiver;
  receiver.answer({{200, {}, {}, true}});  // holds its answer until released
  auto o = options(receiver.url());
  o.read_timeout = std::chrono::milliseconds(200);
  const auto out = make_http_sink(o)->publish(one(), {});
  // The answer is still held after the sink gave up. On a loaded machine the
  // receiver's handler may reach its hold only after the 200 ms, so wait.
  EXPECT_TRUE(eventually([&] { return receiver.held() == 1; }));
  receiver.release();
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "http_read");
  EXPECT_EQ(out.message.find("/hook"), std::string::npos) << out.message;  // host:port only
}

TEST_P(outbox_http_sink, a_stop_request_aborts_a_hanging_request) {
  webhook_receiver receiver;
  receiver.answer({{200, {}, {}, true}});
  auto s = make_http_sink(options(receiver.url()));  // read timeout: 30 s
  const auto m = one();
  std::stop_source stop;
  std::optional<sink_outcome> out;
  std::thread caller([&] { out = s->publish(m, stop.get_token()); });
  ASSERT_TRUE(eventually([&] { return receiver.held() == 1; }));
  stop.request_stop();
  caller.join();
  EXPECT_EQ(receiver.held(), 1);  // still holding: the stop ended the call, not an answer or a timeout
  receiver.release();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->kind, outcome_class::transient);
  EXPECT_EQ(out->code, "http_stopped");
  // A token already stopped sends nothing.
  EXPECT_EQ(s->publish(m, stop.get_token()).code, "http_stopped");
  EXPECT_EQ(receiver.requests().size(), 1u);
}

TEST_P(outbox_http_sink, a_large_response_body_is_read_only_up_to_the_limit_and_the_status_decides) {
  webhook_receiver receiver;
  receiver.answer({{200, {}, std::string(1 << 20, 'x'), false}});
  auto o = options(receiver.url());
  o.max_response_bytes = 1024;
  EXPECT_EQ(make_http_sink(o)->publish(one(), {}).kind, outcome_class::delivered);
}

TEST_P(outbox_http_sink, invalid_urls_and_options_are_invalid_argument_naming_the_value) {
  auto expect_invalid = [&](http_sink_options o, const std::string& named) {
    try {
      (void)make_http_sink(std::move(o));
      ADD_FAILURE() << "accepted; expected an error naming " << named;
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_EQ(e.reason(), "invalid_config") << e.what();
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  for (const char* url :
       {"ftp://example.test/x", "example.test/hook", "http://", "http://:80/x", "http://host:0/x",
        "http://host:99999/", "http://host:port/", "http://ho st/", "http://host/x#frag", "http://[::1/x"}) {
    expect_invalid(options(url), url);
  }
  auto with_credentials = options("https://user:hunter2@example.test/x");
  try {
    (void)make_http_sink(with_credentials);
    ADD_FAILURE() << "accepted credentials in the URL";
  } catch (const spool::error& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();  // masked
  }
  auto o = options("http://127.0.0.1:9/x");
  o.secret.clear();
  expect_invalid(o, "secret");
  o = options("http://127.0.0.1:9/x");
  o.read_timeout = std::chrono::milliseconds(0);
  expect_invalid(o, "read_timeout = 0");
  o = options("http://127.0.0.1:9/x");
  o.headers = {{"X-Spool-Topic", "forged"}};
  expect_invalid(o, "X-Spool-Topic");
  o.headers = {{"X-Ok", "a\r\nX-Injected: 1"}};
  expect_invalid(o, "X-Ok");
  o.headers = {{"Bad Name", "v"}};
  expect_invalid(o, "Bad Name");
  o.headers.clear();
  o.ca_file = (tmp_.path() / "missing.pem").string();
  expect_invalid(o, "missing.pem");
  // Accepted: IPv6 literals, default ports, a query without a path.
  EXPECT_NE(make_http_sink(options("http://[::1]:8080/x")), nullptr);
  EXPECT_NE(make_http_sink(options("https://example.test?x=1")), nullptr);
}

TEST_P(outbox_http_sink, https_delivers_with_the_ca_file_and_without_it_verification_fails_transiently) {
  const auto cert = test_certificate::make();
  const auto ca = tmp_.path() / "ca.pem";
  cert.write_pem(ca);
  webhook_receiver receiver(&cert);
  ASSERT_EQ(receiver.url().rfind("https://", 0), 0u);
  const auto m = one();

  auto o = options(receiver.url());
  o.ca_file = ca.string();
  EXPECT_EQ(make_http_sink(o)->publish(m, {}).kind, outcome_class::delivered);
  ASSERT_EQ(receiver.requests().size(), 1u);
  EXPECT_EQ(receiver.requests()[0].header("X-Spool-Signature"),
            expected_signature(secret, receiver.requests()[0].body));

  const auto out = make_http_sink(options(receiver.url()))->publish(m, {});  // system CAs only
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "http_tls_verify");
  EXPECT_EQ(receiver.requests().size(), 1u);  // nothing was sent to an unverified peer
}

TEST_P(outbox_http_sink, https_to_a_host_the_trusted_certificate_does_not_name_fails_verification) {
  const auto cert = test_certificate::make("DNS:example.test");
  const auto ca = tmp_.path() / "ca.pem";
  cert.write_pem(ca);
  webhook_receiver receiver(&cert);
  auto o = options(receiver.url());  // https://127.0.0.1:PORT
  o.ca_file = ca.string();
  const auto out = make_http_sink(o)->publish(one(), {});
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "http_tls_verify");
  EXPECT_TRUE(receiver.requests().empty());
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_http_sink);

}  // namespace
}  // namespace spool::test
