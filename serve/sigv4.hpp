// AWS Signature Version 4, as the server of `spool serve` checks it: the
// canonical request rebuilt from the request as received, the signing key
// derived per date, region and service, the signature compared in constant
// time, and the request's date within 15 minutes of the server's clock.
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/credentials.hpp"

namespace spool::serve {

// What the verifier reads of a request. Views into the caller's request;
// path and query are raw, as sent (still percent-encoded).
struct signed_request {
  std::string_view method;
  std::string_view path;
  std::string_view query;  // after '?', without it; empty when none
  const std::vector<std::pair<std::string, std::string>>* headers = nullptr;  // names in any case
  std::string_view body;
};

// Why a request's signature was refused, with the AWS error code a client
// expects (MissingAuthenticationToken, IncompleteSignature,
// InvalidClientTokenId, SignatureDoesNotMatch, RequestExpired) and a message
// that never repeats the expected signature.
struct auth_failure {
  std::string code;
  std::string message;
};

struct auth_outcome {
  const credential* who = nullptr;      // set when the signature holds
  std::optional<auth_failure> failure;  // set otherwise
};

namespace sigv4 {
// Signing keys derived once per secret, date, region and service: a key
// takes four HMACs to derive and a client signs every request of a day
// with the same one. Holds at most 256 keys (cleared when full).
// Thread-safe.
class signing_keys {
 public:
  signing_keys();
  ~signing_keys();
  signing_keys(const signing_keys&) = delete;
  signing_keys& operator=(const signing_keys&) = delete;
  // The raw 32-byte key for the scope, derived on first use.
  [[nodiscard]] std::string key(std::string_view secret, std::string_view date, std::string_view region,
                                std::string_view service);

 private:
  struct state;
  std::unique_ptr<state> state_;
};
}  // namespace sigv4

// How far a request's date may be from the server's clock, either way.
inline constexpr std::chrono::minutes max_clock_skew{15};

// Checks the request's Authorization header (AWS4-HMAC-SHA256) against the
// credentials, for service `service` and any region, at time now; derives
// the signing key through `keys` when given (a server's one cache), else
// afresh. Pure apart from reading creds and filling keys: thread-safe.
[[nodiscard]] auth_outcome verify_sigv4(const signed_request& r, const credential_store& creds,
                                        std::chrono::system_clock::time_point now,
                                        std::string_view service = "sqs",
                                        sigv4::signing_keys* keys = nullptr);

// The pieces of the algorithm, for tests and for clients written in C++.
namespace sigv4 {
// Lower-case hex of SHA-256(data).
[[nodiscard]] std::string sha256_hex(std::string_view data);
// RFC 3986 encoding as SigV4 wants it: unreserved characters kept, every
// other byte %XX in upper case; '/' kept when keep_slash.
[[nodiscard]] std::string uri_encode(std::string_view s, bool keep_slash);
// The canonical request for the given signed header names (lower case,
// sorted, as in the Authorization header).
[[nodiscard]] std::string canonical_request(const signed_request& r,
                                            const std::vector<std::string>& signed_headers,
                                            std::string_view payload_hash);
// The raw signing key of a scope (kSigning: four HMACs from the secret).
[[nodiscard]] std::string signing_key(std::string_view secret, std::string_view date, std::string_view region,
                                      std::string_view service);
// The hex signature of string_to_sign under a raw signing key.
[[nodiscard]] std::string signature_with_key(std::string_view key, std::string_view string_to_sign);
// The hex signature of string_to_sign under the key derived from secret.
[[nodiscard]] std::string signature(std::string_view secret, std::string_view date, std::string_view region,
                                    std::string_view service, std::string_view string_to_sign);
}  // namespace sigv4

}  // namespace spool::serve
