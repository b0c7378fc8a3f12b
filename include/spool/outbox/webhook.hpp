// Standard Webhooks signatures (https://www.standardwebhooks.com): what the
// HTTP sink sends beside X-Spool-Signature when it has signing secrets, and
// what a receiver uses to refuse a forged, stale or replayed request.
//
// The sink sends three headers: webhook-id (the envelope id, the same on
// every redelivery), webhook-timestamp (integer seconds since the Unix epoch
// at sending) and webhook-signature: "v1,<base64 HMAC-SHA256 of
// id.timestamp.body>", one per signing secret, separated by spaces, so that
// a receiver holding either secret accepts the request while secrets rotate.
//
// A secret "whsec_<base64>" keys the HMAC with its decoded bytes (the
// Standard Webhooks form); any other text keys it with its own bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spool::outbox {

// The webhook-signature value for id, timestamp and body under every
// secret. Errors: invalid_argument (invalid_config) for no secret, an empty
// one or a whsec_ one that is not base64. Pure: thread-safe.
[[nodiscard]] std::string standard_webhook_signature(const std::vector<std::string>& secrets,
                                                     std::string_view id, std::int64_t timestamp,
                                                     std::string_view body);

// A receiver's verdict on one request.
enum class webhook_verdict {
  valid,
  missing_header,       // webhook-id, webhook-timestamp or webhook-signature absent or empty
  malformed_timestamp,  // not a decimal integer
  stale,                // further than the tolerance from now, in the past or the future
  bad_signature,        // no v1 signature matches under any of the receiver's secrets
};
[[nodiscard]] std::string_view to_string(webhook_verdict v) noexcept;

// The three headers' values and the exact body bytes of a request.
struct webhook_request {
  std::string_view id, timestamp, signature, body;
};

// Checks the timestamp against now ± tolerance, then each v1 signature of
// the header against each secret, comparing in constant time. Stale requests
// are refused before any HMAC is computed. Errors: as
// standard_webhook_signature for the secrets. Pure: thread-safe.
[[nodiscard]] webhook_verdict verify_standard_webhook(
    const webhook_request& request, const std::vector<std::string>& secrets,
    std::chrono::seconds tolerance = std::chrono::minutes(5),
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Refuses a replay inside the tolerance window, which the timestamp alone
// cannot: a receiver calls seen(id) for a valid request before it acts and
// remember(id, timestamp) once it has acted (and answered 2xx). An id is kept
// until its timestamp is older than the tolerance, after which
// verify_standard_webhook refuses the request as stale anyway. The relay
// sends a redelivery with the same webhook-id but a new timestamp and
// signature: seen() is then true, and the receiver should answer 2xx without
// acting again, since it already did. Thread-safe.
class webhook_replay_guard {
 public:
  explicit webhook_replay_guard(std::chrono::seconds tolerance = std::chrono::minutes(5));
  ~webhook_replay_guard();
  webhook_replay_guard(const webhook_replay_guard&) = delete;
  webhook_replay_guard& operator=(const webhook_replay_guard&) = delete;

  [[nodiscard]] bool seen(std::string_view id,
                          std::chrono::system_clock::time_point now = std::chrono::system_clock::now());
  void remember(std::string_view id, std::int64_t timestamp,
                std::chrono::system_clock::time_point now = std::chrono::system_clock::now());
  [[nodiscard]] std::size_t size() const;  // ids held now

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spool::outbox
