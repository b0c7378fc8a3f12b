// Fuzz target: the texts the relay's HTTP sink and the legacy queue
// configuration read from outside — a webhook URL (parse_http_url), a
// receiver's Retry-After header (parse_retry_after) and the JSON queue
// configuration other services write (mq::queue_config::from_json). Bad input
// is spool::error(invalid_argument) or, for Retry-After, nothing; what parses
// holds the parser's promises: a URL has a host and a port in 1..65535 and
// never keeps credentials, a delay is within 0..1 day, and a configuration
// writes itself back to the same configuration.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "outbox/sinks/http_status.hpp"
#include "outbox/sinks/http_url.hpp"
#include "spool/mq/queue.hpp"

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
