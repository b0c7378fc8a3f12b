// Standard Webhooks signing and verification (spool/outbox/webhook.hpp)
// through libcrypto's one-shot HMAC and its constant-time comparison.
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <mutex>

#include "common/text/base64.hpp"
#include "spool/error.hpp"
#include "spool/outbox/webhook.hpp"

namespace spool::outbox {

namespace {

[[noreturn]] void bad_secrets(std::string_view what) {
  throw error(errc::invalid_argument, fmt::format("standard webhooks: {}", what), "invalid_config");
}

// The HMAC keys of secrets, in order; never shown in an error.
std::vector<std::string> keys_of(const std::vector<std::string>& secrets) {
  if (secrets.empty()) bad_secrets("no signing secret");
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < secrets.size(); ++i) {
    const auto& s = secrets[i];
    if (s.empty()) bad_secrets(fmt::format("secret {} is empty", i + 1));
    if (!s.starts_with("whsec_")) {
      keys.push_back(s);
      continue;
    }
    auto key = spool::detail::base64_decode(std::string_view(s).substr(6));
    if (!key || key->empty()) bad_secrets(fmt::format("secret {} starts with whsec_ but is not base64", i + 1));
    keys.push_back(std::move(*key));
  }
  return keys;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  static constexpr unsigned char empty = 0;  // OpenSSL wants a non-null pointer
  const auto* bytes = data.empty() ? &empty : reinterpret_cast<const unsigned char*>(data.data());
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), bytes, data.size(), mac, &size) ==
      nullptr) {
    throw error(errc::unavailable, "standard webhooks: HMAC-SHA256 failed", "sink_failed");
  }
  return {reinterpret_cast<const char*>(mac), size};
}

std::string signed_content(std::string_view id, std::string_view timestamp, std::string_view body) {
  std::string out;
  out.reserve(id.size() + timestamp.size() + body.size() + 2);
  out.append(id).append(".").append(timestamp).append(".").append(body);
  return out;
}

}  // namespace

std::string standard_webhook_signature(const std::vector<std::string>& secrets, std::string_view id,
                                       std::int64_t timestamp, std::string_view body) {
  const auto content = signed_content(id, std::to_string(timestamp), body);
  std::string out;
  for (const auto& key : keys_of(secrets)) {
    if (!out.empty()) out += ' ';
    out += "v1," + spool::detail::base64_encode(hmac_sha256(key, content));
  }
  return out;
}

std::string_view to_string(webhook_verdict v) noexcept {
  switch (v) {
    case webhook_verdict::valid:
      return "valid";
    case webhook_verdict::missing_header:
      return "missing_header";
    case webhook_verdict::malformed_timestamp:
      return "malformed_timestamp";
    case webhook_verdict::stale:
      return "stale";
    case webhook_verdict::bad_signature:
      return "bad_signature";
  }
  return "unknown";
}

webhook_verdict verify_standard_webhook(const webhook_request& r, const std::vector<std::string>& secrets,
                                        std::chrono::seconds tolerance,
                                        std::chrono::system_clock::time_point now) {
  const auto keys = keys_of(secrets);
  if (r.id.empty() || r.timestamp.empty() || r.signature.empty()) return webhook_verdict::missing_header;
  std::int64_t ts = 0;
  const auto [end, ec] = std::from_chars(r.timestamp.data(), r.timestamp.data() + r.timestamp.size(), ts);
  if (ec != std::errc{} || end != r.timestamp.data() + r.timestamp.size()) {
    return webhook_verdict::malformed_timestamp;
  }
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  // Compared without overflow: ts may be any 64-bit value.
  if (ts < now_s - tolerance.count() || ts > now_s + tolerance.count()) return webhook_verdict::stale;
  const auto content = signed_content(r.id, r.timestamp, r.body);
  std::vector<std::string> macs;
  macs.reserve(keys.size());
  for (const auto& key : keys) macs.push_back(hmac_sha256(key, content));
  // "v1,<base64>" entries separated by spaces; other versions are skipped.
  std::string_view rest = r.signature;
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    const auto entry = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    if (!entry.starts_with("v1,")) continue;
    const auto given = spool::detail::base64_decode(entry.substr(3));
    if (!given) continue;
    for (const auto& mac : macs) {
      if (given->size() == mac.size() && CRYPTO_memcmp(given->data(), mac.data(), mac.size()) == 0) {
        return webhook_verdict::valid;
      }
    }
  }
  return webhook_verdict::bad_signature;
}

struct webhook_replay_guard::impl {
  std::chrono::seconds tolerance;
  mutable std::mutex mutex;
  std::map<std::string, std::int64_t, std::less<>> expiry;  // id → the second it may be forgotten

  void prune(std::int64_t now_s) {
    std::erase_if(expiry, [now_s](const auto& kv) { return kv.second < now_s; });
  }
};

webhook_replay_guard::webhook_replay_guard(std::chrono::seconds tolerance) : impl_(std::make_unique<impl>()) {
  impl_->tolerance = tolerance;
}
webhook_replay_guard::~webhook_replay_guard() = default;

bool webhook_replay_guard::seen(std::string_view id, std::chrono::system_clock::time_point now) {
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::scoped_lock lock(impl_->mutex);
  impl_->prune(now_s);
  return impl_->expiry.find(id) != impl_->expiry.end();
}

void webhook_replay_guard::remember(std::string_view id, std::int64_t timestamp,
                                    std::chrono::system_clock::time_point now) {
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::scoped_lock lock(impl_->mutex);
  impl_->prune(now_s);
  // Kept while a request with this id could still pass the timestamp check:
  // the later of its own timestamp and now, plus the tolerance.
  const auto tol = impl_->tolerance.count();
  const auto until = std::min(std::max(timestamp, now_s), now_s + tol) + tol;
  auto& at = impl_->expiry[std::string(id)];
  at = std::max(at, until);
}

std::size_t webhook_replay_guard::size() const {
  const std::scoped_lock lock(impl_->mutex);
  return impl_->expiry.size();
}

}  // namespace spool::outbox
