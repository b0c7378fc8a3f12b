// How the HTTP sink turns a response into an outcome (outbox.md §8).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "spool/outbox/sink.hpp"

namespace spool::outbox::detail {

// Retry-After as delta-seconds or an HTTP date (IMF-fixdate), relative to
// now; nullopt when absent or unparsable; a date in the past is 0. Capped at
// a day (the relay caps it further at its backoff cap).
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);

// 2xx: delivered. 4xx except 408 and 429: permanent. Everything else
// (1xx, 3xx — redirects are not followed —, 408, 429, 5xx): transient, with
// the Retry-After. The code is http_N; the message is "N reason".
[[nodiscard]] sink_outcome classify_http_status(int status, std::string_view reason,
                                                std::string_view retry_after,
                                                std::chrono::system_clock::time_point now);

}  // namespace spool::outbox::detail
