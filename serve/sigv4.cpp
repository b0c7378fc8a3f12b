#include "serve/sigv4.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <unordered_map>

#include "serve/digests.hpp"

namespace spool::serve {

namespace {

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 0xF];
  }
  return out;
}

std::string hmac(std::string_view key, std::string_view data) { return hmac_sha256(key, data); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A header value as SigV4 canonicalizes it: trimmed, inner runs of spaces one space.
std::string canonical_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (const char c : trim(v)) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding of a query component ('+' is a space, as form encoding has it).
std::string query_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string canonical_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const auto eq = part.find('=');
    const auto key = part.substr(0, eq);
    const auto value = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    pairs.emplace_back(sigv4::uri_encode(query_decode(key), false),
                       sigv4::uri_encode(query_decode(value), false));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [k, v] : pairs) {
    if (!out.empty()) out += '&';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

struct authorization {
  std::string access_key_id, date, region, service, terminator;
  std::vector<std::string> signed_headers;
  std::string signature;
};

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// Parses "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…".
std::optional<authorization> parse_authorization(std::string_view v, std::string& why) {
  constexpr std::string_view algorithm = "AWS4-HMAC-SHA256 ";
  v = trim(v);
  if (v.substr(0, algorithm.size()) != algorithm) {
    why = "the Authorization header must use AWS4-HMAC-SHA256";
    return std::nullopt;
  }
  authorization a;
  std::string_view credential, signed_headers, signature;
  for (auto part : split(v.substr(algorithm.size()), ',')) {
    part = trim(part);
    const auto eq = part.find('=');
    if (eq == std::string_view::npos) continue;
    const auto key = part.substr(0, eq);
    const auto value = part.substr(eq + 1);
    if (key == "Credential") credential = value;
    if (key == "SignedHeaders") signed_headers = value;
    if (key == "Signature") signature = value;
  }
  if (credential.empty() || signed_headers.empty() || signature.empty()) {
    why = "the Authorization header needs Credential, SignedHeaders and Signature";
    return std::nullopt;
  }
  const auto scope = split(credential, '/');
  if (scope.size() != 5 || scope[0].empty()) {
    why = "Credential must be ACCESS_KEY/DATE/REGION/SERVICE/aws4_request";
    return std::nullopt;
  }
  a.access_key_id = scope[0];
  a.date = scope[1];
  a.region = scope[2];
  a.service = scope[3];
  a.terminator = scope[4];
  for (const auto h : split(signed_headers, ';')) a.signed_headers.emplace_back(h);
  a.signature = signature;
  return a;
}

// "YYYYMMDDTHHMMSSZ" as a time point, in seconds: years 0000..9999 overflow the clock's nanoseconds.
std::optional<std::chrono::sys_seconds> parse_amz_date(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  for (std::size_t i = 0; i < 15; ++i) {
    if (i != 8 && !std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
  }
  const auto num = [&](std::size_t at, std::size_t n) {
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) v = v * 10 + (s[i] - '0');
    return v;
  };
  using namespace std::chrono;
  const year_month_day ymd{year{num(0, 4)}, month{static_cast<unsigned>(num(4, 2))},
                           day{static_cast<unsigned>(num(6, 2))}};
  if (!ymd.ok() || num(9, 2) > 23 || num(11, 2) > 59 || num(13, 2) > 60) return std::nullopt;
  return sys_days{ymd} + hours{num(9, 2)} + minutes{num(11, 2)} + seconds{num(13, 2)};
}

auth_outcome refuse(std::string code, std::string message) {
  return {nullptr, auth_failure{std::move(code), std::move(message)}};
}

}  // namespace

namespace sigv4 {

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, &sha256_digest(), nullptr);
  return hex(out.data(), len);
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string canonical_request(const signed_request& r, const std::vector<std::string>& signed_headers,
                              std::string_view payload_hash) {
  std::string out;
  out += r.method;
  out += '\n';
  // Every service but S3 encodes the path as sent once more.
  out += uri_encode(r.path.empty() ? std::string_view("/") : r.path, true);
  out += '\n';
  out += canonical_query(r.query);
  out += '\n';
  for (const auto& name : signed_headers) {
    std::string joined;
    bool first = true;
    if (r.headers != nullptr) {
      for (const auto& [k, v] : *r.headers) {
        if (lower(k) != name) continue;
        if (!first) joined += ',';
        joined += canonical_value(v);
        first = false;
      }
    }
    out += name;
    out += ':';
    out += joined;
    out += '\n';
  }
  out += '\n';
  for (std::size_t i = 0; i < signed_headers.size(); ++i) out += (i ? ";" : "") + signed_headers[i];
  out += '\n';
  out += payload_hash;
  return out;
}

std::string signing_key(std::string_view secret, std::string_view date, std::string_view region,
                        std::string_view service) {
  const auto k_date = hmac("AWS4" + std::string(secret), date);
  const auto k_region = hmac(k_date, region);
  const auto k_service = hmac(k_region, service);
  return hmac(k_service, "aws4_request");
}

std::string signature_with_key(std::string_view key, std::string_view string_to_sign) {
  const auto sig = hmac(key, string_to_sign);
  return hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}

std::string signature(std::string_view secret, std::string_view date, std::string_view region,
                      std::string_view service, std::string_view string_to_sign) {
  return signature_with_key(signing_key(secret, date, region, service), string_to_sign);
}

struct signing_keys::state {
  std::mutex mu;
  std::unordered_map<std::string, std::string> keys;  // secret NUL date NUL region NUL service
};

signing_keys::signing_keys() : state_(std::make_unique<state>()) {}
signing_keys::~signing_keys() = default;

std::string signing_keys::key(std::string_view secret, std::string_view date, std::string_view region,
                              std::string_view service) {
  std::string scope;
  scope.reserve(secret.size() + date.size() + region.size() + service.size() + 3);
  scope.append(secret).append(1, '\0').append(date).append(1, '\0').append(region).append(1, '\0').append(
      service);
  {
    std::lock_guard lock(state_->mu);
    const auto it = state_->keys.find(scope);
    if (it != state_->keys.end()) return it->second;
  }
  auto k = signing_key(secret, date, region, service);
  std::lock_guard lock(state_->mu);
  if (state_->keys.size() >= 256) state_->keys.clear();  // dates roll over; regions are few
  state_->keys.emplace(std::move(scope), k);
  return k;
}

}  // namespace sigv4

auth_outcome verify_sigv4(const signed_request& r, const credential_store& creds,
                          std::chrono::system_clock::time_point now, std::string_view service,
                          sigv4::signing_keys* keys) {
  const auto header = [&](std::string_view name) -> std::optional<std::string_view> {
    if (r.headers == nullptr) return std::nullopt;
    for (const auto& [k, v] : *r.headers) {
      if (lower(k) == name) return std::string_view(v);
    }
    return std::nullopt;
  };
  const auto auth_header = header("authorization");
  if (!auth_header) return refuse("MissingAuthenticationToken", "Request is missing Authentication Token");
  std::string why;
  const auto a = parse_authorization(*auth_header, why);
  if (!a) return refuse("IncompleteSignature", why);
  if (a->terminator != "aws4_request" || a->service != service) {
    return refuse("IncompleteSignature",
                  fmt::format("Credential scope must end in /{}/aws4_request", service));
  }
  if (std::find(a->signed_headers.begin(), a->signed_headers.end(), "host") == a->signed_headers.end()) {
    return refuse("IncompleteSignature", "the host header must be signed");
  }
  if (!std::is_sorted(a->signed_headers.begin(), a->signed_headers.end())) {
    return refuse("IncompleteSignature", "SignedHeaders must be lower case and sorted");
  }
  const auto amz_date = header("x-amz-date");
  if (!amz_date) return refuse("IncompleteSignature", "the request needs an X-Amz-Date header");
  const auto when = parse_amz_date(*amz_date);
  if (!when || amz_date->substr(0, 8) != a->date) {
    return refuse("IncompleteSignature",
                  "X-Amz-Date must be YYYYMMDDTHHMMSSZ and match the credential's date");
  }
  // Compared in whole seconds (floor above, ceil below: the same bounds as to the nanosecond).
  if (*when > std::chrono::floor<std::chrono::seconds>(now) + max_clock_skew ||
      *when < std::chrono::ceil<std::chrono::seconds>(now) - max_clock_skew) {
    return refuse(
        "RequestExpired",
        fmt::format("Request has expired: it is dated {}, more than {} minutes from the server's clock",
                    *amz_date, max_clock_skew.count()));
  }
  const credential* who = creds.find(a->access_key_id);
  if (who == nullptr)
    return refuse("InvalidClientTokenId", "The security token included in the request is invalid.");
  const auto canonical = sigv4::canonical_request(r, a->signed_headers, sigv4::sha256_hex(r.body));
  const auto scope = fmt::format("{}/{}/{}/aws4_request", a->date, a->region, a->service);
  const auto to_sign =
      fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", *amz_date, scope, sigv4::sha256_hex(canonical));
  const auto expected = sigv4::signature_with_key(
      keys != nullptr ? keys->key(who->secret, a->date, a->region, a->service)
                      : sigv4::signing_key(who->secret, a->date, a->region, a->service),
      to_sign);
  if (expected.size() != a->signature.size() ||
      CRYPTO_memcmp(expected.data(), a->signature.data(), expected.size()) != 0) {
    return refuse(
        "SignatureDoesNotMatch",
        "The request signature we calculated does not match the signature you provided. Check your AWS "
        "Secret Access Key and signing method.");
  }
  return {who, std::nullopt};
}

}  // namespace spool::serve
