// Fuzz target: AWS Signature Version 4 as `spool serve` checks it
// (serve/sigv4.hpp): verify_sigv4 and its Authorization-header parser, against
// a fixed credentials set on a fixed clock (2026-12-02T10:00:00Z). The input
// is a request: method, path and query on the first three lines, then header
// lines "Name: value" up to an empty line, then the body as is. An
// Authorization header ending in "Signature=*" is signed here, by the SigV4
// algorithm, with the secret of its Credential's key ("Signature=!": with
// another secret), so that fuzzed requests also reach an accepted signature.
// verify_sigv4 never throws; it accepts, or refuses with one of its five AWS
// codes and a message that shows no signature. What it accepts is refused
// with another secret for the same key, with a changed body or method, and
// on a clock more than 15 minutes away from its date; a request the harness signed with
// the right secret and a well-formed header is accepted unless its date is
// wrong. The body is also read as a credentials file
// (credential_store::parse): a store, or spool::error(invalid_argument)
// that repeats no secret.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"
#include "serve/credentials.hpp"
#include "serve/sigv4.hpp"
#include "serve/sqs/errors.hpp"
#include "spool/error.hpp"

using spool::errc;
using spool::fuzz::check;
using spool::fuzz::check_error;
namespace serve = spool::serve;
using headers_t = std::vector<std::pair<std::string, std::string>>;

namespace {

// The unit tests' keys (tests/serve/sigv4_test.cpp), and the same keys with other secrets.
const serve::credential_store& keys() {
  static const auto store = serve::credential_store::parse(
      "AKIDEXAMPLE wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n"
      "AKID1 secret/one 123456789012\n");
  return store;
}
const serve::credential_store& other_keys() {
  static const auto store = serve::credential_store::parse(
      "AKIDEXAMPLE wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEz\n"
      "AKID1 secret/two 123456789012\n");
  return store;
}

const auto now = std::chrono::sys_days{std::chrono::year{2026} / 12 / 2} + std::chrono::hours{10};

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (;;) {
    const auto at = s.find(sep);
    out.emplace_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::size_t count_named(const headers_t& h, std::string_view name) {
  return std::count_if(h.begin(), h.end(), [&](const auto& kv) { return lower(kv.first) == name; });
}

// An Authorization header the harness signs: exactly
// "AWS4-HMAC-SHA256 Credential=K/D/R/S/T, SignedHeaders=H, Signature=*" (or "=!").
struct to_sign {
  std::size_t header = 0;  // its index in the headers
  bool right_secret = true;
  std::vector<std::string> scope;  // K, D, R, S, T
  std::vector<std::string> signed_headers;
  bool well_formed = false;  // a header verify must read as written
};

bool plain_token(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c == ',' || c == ' ' || c == '\t'; });
}

std::optional<to_sign> find_placeholder(const headers_t& h) {
  constexpr std::string_view head = "AWS4-HMAC-SHA256 Credential=", mid = ", SignedHeaders=",
                             tail = ", Signature=";
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (lower(h[i].first) != "authorization") continue;
    const std::string_view v = h[i].second;
    const auto m = v.find(mid), t = v.rfind(tail);
    if (!v.starts_with(head) || m == std::string_view::npos || t == std::string_view::npos ||
        t < m + mid.size())
      continue;
    const auto mark = v.substr(t + tail.size());
    if (mark != "*" && mark != "!") continue;
    const auto credential = v.substr(head.size(), m - head.size());
    const auto names = v.substr(m + mid.size(), t - m - mid.size());
    to_sign s{i, mark == "*", split(credential, '/'), split(names, ';')};
    if (s.scope.size() != 5 || !plain_token(credential) || !plain_token(names)) continue;
    const auto& n = s.signed_headers;
    const bool names_ok = std::all_of(n.begin(), n.end(),
                                      [](const std::string& x) {
                                        return !x.empty() && std::all_of(x.begin(), x.end(), [](char c) {
                                          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                                        });
                                      }) &&
                          std::adjacent_find(n.begin(), n.end(), std::greater_equal<>()) == n.end() &&
                          std::find(n.begin(), n.end(), "host") != n.end() &&
                          std::find(n.begin(), n.end(), "authorization") == n.end();
    s.well_formed = names_ok && s.scope[3] == "sqs" && s.scope[4] == "aws4_request" &&
                    keys().find(s.scope[0]) != nullptr && count_named(h, "authorization") == 1;
    return s;
  }
  return std::nullopt;
}

// Signs as a client does (the SigV4 steps), replacing the placeholder.
void sign(headers_t& h, const to_sign& s, const serve::signed_request& r) {
  const auto* c = (s.right_secret ? keys() : other_keys()).find(s.scope[0]);
  const std::string secret = c != nullptr ? c->secret : std::string("no such key");
  std::string amz_date;
  for (const auto& [k, v] : h) {
    if (lower(k) == "x-amz-date") {
      amz_date = v;
      break;
    }
  }
  const auto canonical =
      serve::sigv4::canonical_request(r, s.signed_headers, serve::sigv4::sha256_hex(r.body));
  const auto scope = s.scope[1] + "/" + s.scope[2] + "/" + s.scope[3] + "/aws4_request";
  const auto string_to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + serve::sigv4::sha256_hex(canonical);
  auto& v = h[s.header].second;
  v.pop_back();
  v += serve::sigv4::signature(secret, s.scope[1], s.scope[2], s.scope[3], string_to_sign);
}

serve::auth_outcome verify(const serve::signed_request& r, const serve::credential_store& store,
                           std::chrono::system_clock::time_point at) {
  try {
    const auto o = serve::verify_sigv4(r, store, at);
    check((o.who != nullptr) != o.failure.has_value(), "an outcome is neither accepted nor refused, or both");
    if (o.failure) {
      const auto& f = *o.failure;
      check(f.code == "MissingAuthenticationToken" || f.code == "IncompleteSignature" ||
                f.code == "InvalidClientTokenId" || f.code == "SignatureDoesNotMatch" ||
                f.code == "RequestExpired",
            "a refusal with an undocumented code");
      check(spool::serve::sqs::kind_of(f.code).status != 500, "a refusal code the SQS errors do not know");
      check(!f.message.empty(), "a refusal without a message");
      std::size_t run = 0;
      for (const char ch : f.message) {
        run = std::isxdigit(static_cast<unsigned char>(ch)) ? run + 1 : 0;
        check(run < 64, "a refusal message shows a signature");
      }
    }
    return o;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    spool::fuzz::fail("verify_sigv4 threw");
  } catch (...) {
    spool::fuzz::fail("verify_sigv4 threw a non-exception");
  }
}

std::string code_of(const serve::auth_outcome& o) { return o.failure ? o.failure->code : "accepted"; }

void credentials_file(std::string_view text) {
  std::vector<std::vector<std::string>> lines;
  for (const auto& line : split(text, '\n')) {
    std::vector<std::string> words;
    std::string w;
    for (const char c : line + ' ') {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!w.empty()) words.push_back(std::move(w));
        w.clear();
      } else {
        w += c;
      }
    }
    if (!words.empty() && words[0][0] != '#') lines.push_back(std::move(words));
  }
  try {
    const auto store = serve::credential_store::parse(text);
    check(store.size() == lines.size(), "a credentials file parsed to another number of keys");
    for (const auto& w : lines) {
      const auto* c = store.find(w[0]);
      check(c != nullptr && c->secret == w[1], "a parsed credential lost its key or secret");
      check(c->account.size() == 12 && std::all_of(c->account.begin(), c->account.end(),
                                                   [](unsigned char d) { return std::isdigit(d); }),
            "a parsed credential's account is not 12 digits");
    }
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
    // Secrets marked by a byte no message of its own has, and in no key (a key may be quoted).
    for (const auto& w : lines) {
      if (w.size() < 2 || w[1].size() < 4) continue;
      const auto& s = w[1];
      if (std::none_of(s.begin(), s.end(), [](char c) { return c == '@' || (c & 0x80) != 0; })) continue;
      if (std::any_of(lines.begin(), lines.end(),
                      [&](const auto& l) { return l[0].find(s) != std::string::npos; }))
        continue;
      check(std::string_view(e.what()).find(s) == std::string_view::npos,
            "a credentials error shows a secret");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const auto next_line = [&] {
    const auto nl = rest.find('\n');
    const auto line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    return line;
  };
  const std::string method(next_line()), path(next_line()), query(next_line());
  headers_t headers;
  while (!rest.empty()) {
    const auto line = next_line();
    if (line.empty()) break;
    const auto colon = line.find(':');
    auto value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    headers.emplace_back(line.substr(0, colon), value);
  }
  std::string body(rest);
  serve::signed_request r{method, path, query, &headers, body};

  const auto placeholder = find_placeholder(headers);
  if (placeholder) sign(headers, *placeholder, r);

  const auto o = verify(r, keys(), now);
  if (count_named(headers, "authorization") == 0)
    check(code_of(o) == "MissingAuthenticationToken", "a request without Authorization is not refused so");
  if (placeholder && placeholder->well_formed) {
    const bool date_refused = code_of(o) == "RequestExpired" ||
                              (o.failure && o.failure->message.find("X-Amz-Date") != std::string::npos);
    if (placeholder->right_secret) {
      check(o.who != nullptr || date_refused, "a request signed with the right secret is refused");
    } else {
      check(code_of(o) == "SignatureDoesNotMatch" || date_refused,
            "a request signed with another secret is not refused as SignatureDoesNotMatch");
    }
  }
  if (o.who != nullptr) {
    check(!placeholder || placeholder->right_secret, "a request signed with another secret is accepted");
    check(keys().find(o.who->access_key_id) == o.who, "an accepted request names no credential of the store");
    check(code_of(verify(r, other_keys(), now)) == "SignatureDoesNotMatch",
          "an accepted request is accepted under another secret too");
    // Its date is within 15 minutes of now: 31 minutes on, or back, it is more than 15 away.
    check(code_of(verify(r, keys(), now + std::chrono::minutes(31))) == "RequestExpired" &&
              code_of(verify(r, keys(), now - std::chrono::minutes(31))) == "RequestExpired",
          "an accepted request is accepted more than 15 minutes away from its date");
    const std::string other_body = body + "!";
    const std::string other_method = method + "X";
    serve::signed_request changed = r;
    changed.body = other_body;
    check(code_of(verify(changed, keys(), now)) == "SignatureDoesNotMatch", "a changed body is accepted");
    changed = r;
    changed.method = other_method;
    check(code_of(verify(changed, keys(), now)) == "SignatureDoesNotMatch", "a changed method is accepted");
  }

  credentials_file(body);
  return 0;
}
