// Fuzz target: the texts the relay's HTTP sink and the legacy queue
// configuration read from outside — a webhook URL (parse_http_url), a
// receiver's Retry-After header (parse_retry_after) and the JSON queue
// configuration other services write (mq::queue_config::from_json). Bad input
// is spool::error(invalid_argument) or, for Retry-After, nothing; what parses
// holds the parser's promises: a URL has a host and a port in 1..65535 and
// never keeps credentials, a delay is within 0..1 day, and a configuration
// writes itself back to the same configuration. The Standard Webhooks headers
// a receiver checks (verify_standard_webhook), as id, timestamp, signature and
// body lines: a verdict, never an exception; only a request within the
// tolerance of the clock and signed with a receiver's secret is valid; what
// the sink signs verifies under its secret and under no other.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "outbox/sinks/http_status.hpp"
#include "outbox/sinks/http_url.hpp"
#include "spool/mq/queue.hpp"
#include "spool/outbox/webhook.hpp"

using spool::errc;
using spool::fuzz::check;
using spool::fuzz::check_error;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  try {
    const auto u = spool::outbox::detail::parse_http_url(input);
    check(!u.host.empty(), "a URL without a host parsed");
    check(u.port >= 1 && u.port <= 65535, "a URL's port is outside 1..65535");
    check(!u.target.empty() && u.target.front() == '/', "a URL's target does not start with /");
    check(u.host.find('@') == std::string::npos, "a URL's host keeps user information");
    check(input.find(u.host) != std::string_view::npos, "a URL's host is not taken from the URL");
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
  }

  // A fixed clock, so that an input reproduces.
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'767'225'600));  // 2026-01-01
  if (const auto delay = spool::outbox::detail::parse_retry_after(input, now)) {
    check(delay->count() >= 0, "a negative Retry-After");
    check(*delay <= std::chrono::hours(24), "a Retry-After over a day");
  }

  {
    std::string_view parts[4];
    std::string_view rest = input;
    for (int i = 0; i < 3; ++i) {
      const auto nl = rest.find('\n');
      parts[i] = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
    parts[3] = rest;
    const std::vector<std::string> secrets{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "a plain secret"};
    using spool::outbox::webhook_verdict;
    const auto v = spool::outbox::verify_standard_webhook({parts[0], parts[1], parts[2], parts[3]}, secrets,
                                                          std::chrono::minutes(5), now);
    if (v == webhook_verdict::valid) {
      const auto ts = std::stoll(std::string(parts[1]));
      check(ts >= 1'767'225'600 - 300 && ts <= 1'767'225'600 + 300, "a stale request verified");
    }
    const std::int64_t at = 1'767'225'600 - 10;
    const auto sig = spool::outbox::standard_webhook_signature(secrets, parts[0], at, parts[3]);
    const auto ts = std::to_string(at);
    check(parts[0].empty() ||  // no id: missing_header
              spool::outbox::verify_standard_webhook({parts[0], ts, sig, parts[3]}, {secrets[1]},
                                                     std::chrono::minutes(5), now) == webhook_verdict::valid,
          "what the sink signed did not verify");
    check(parts[0].empty() || spool::outbox::verify_standard_webhook(
                                  {parts[0], ts, sig, parts[3]}, {"another secret"}, std::chrono::minutes(5),
                                  now) == webhook_verdict::bad_signature,
          "a request verified under a secret that did not sign it");
  }

  try {
    const auto c = spool::mq::queue_config::from_json(input);
    const auto again = spool::mq::queue_config::from_json(c.to_json());
    check(again.queue_name == c.queue_name && again.queue_uri == c.queue_uri &&
              again.connections == c.connections && again.visibility_timeout == c.visibility_timeout,
          "a queue configuration did not read back as itself");
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
  }
  return 0;
}
