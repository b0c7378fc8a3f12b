// AWS Signature Version 4 as `spool serve` checks it (serve/sigv4.hpp). The
// expected signatures come from outside this project: AWS's published
// get-vanilla example, and a query-protocol request signed by botocore.
#include "serve/sigv4.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "spool/error.hpp"

namespace spool::serve {
namespace {

using headers_t = std::vector<std::pair<std::string, std::string>>;
using std::chrono::sys_days;
using namespace std::chrono_literals;

const auto vanilla_time = sys_days{std::chrono::year{2015} / 8 / 30} + 12h + 36min;
const auto query_time = sys_days{std::chrono::year{2026} / 12 / 2} + 10h;

credential_store example_keys() {
  return credential_store::parse(
      "# the AWS documentation's example key, and one botocore signed with\n"
      "AKIDEXAMPLE wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n"
      "\n"
      "AKID1 secret/one 123456789012\n");
}

// The query-protocol request botocore 1.29 signed for us (SigV4Auth, sqs, eu-west-1).
struct botocore_request {
  headers_t headers{{"Host", "127.0.0.1:9324"},
                    {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
                    {"X-Amz-Date", "20261202T100000Z"},
                    {"Authorization",
                     "AWS4-HMAC-SHA256 Credential=AKID1/20261202/eu-west-1/sqs/aws4_request, "
                     "SignedHeaders=content-type;host;x-amz-date, "
                     "Signature=5250297783a0bc2d00ef031143f91a61abce5dcd64a76e67df29cfce09999d37"}};
  std::string body = "Action=SendMessage&MessageBody=hello%20world&Version=2012-11-05";
  [[nodiscard]] signed_request view() const { return {"POST", "/000000000000/q1", "", &headers, body}; }
};

std::string failure_code(const auth_outcome& o) {
  return o.failure ? o.failure->code : std::string("accepted");
}

TEST(sigv4, accepts_the_aws_get_vanilla_example) {
  const headers_t h{{"Host", "example.amazonaws.com"},
                    {"X-Amz-Date", "20150830T123600Z"},
                    {"Authorization",
                     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                     "SignedHeaders=host;x-amz-date, "
                     "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}};
  const auto keys = example_keys();
  const auto o = verify_sigv4({"GET", "/", "", &h, ""}, keys, vanilla_time, "service");
  ASSERT_FALSE(o.failure) << o.failure->code << ": " << o.failure->message;
  EXPECT_EQ(o.who->access_key_id, "AKIDEXAMPLE");
  EXPECT_EQ(o.who->account, "000000000000");  // no account on its line
}

TEST(sigv4, accepts_a_query_protocol_request_signed_by_botocore_and_names_its_account) {
  const botocore_request r;
  const auto keys = example_keys();
  const auto o = verify_sigv4(r.view(), keys, query_time);
  ASSERT_FALSE(o.failure) << o.failure->code << ": " << o.failure->message;
  EXPECT_EQ(o.who->account, "123456789012");
}

TEST(sigv4, refuses_a_changed_body_a_changed_path_and_a_changed_signed_header) {
  const auto keys = example_keys();
  botocore_request body;
  body.body = "Action=SendMessage&MessageBody=hello%20World&Version=2012-11-05";
  EXPECT_EQ(failure_code(verify_sigv4(body.view(), keys, query_time)), "SignatureDoesNotMatch");
  const botocore_request path;
  auto v = path.view();
  v.path = "/000000000000/q2";
  EXPECT_EQ(failure_code(verify_sigv4(v, keys, query_time)), "SignatureDoesNotMatch");
  botocore_request header;
  header.headers[1].second = "application/json";
  EXPECT_EQ(failure_code(verify_sigv4(header.view(), keys, query_time)), "SignatureDoesNotMatch");
}

TEST(sigv4, refuses_a_signature_made_with_a_wrong_secret) {
  const auto wrong = credential_store::parse("AKID1 secret/two\n");
  const botocore_request r;
  const auto o = verify_sigv4(r.view(), wrong, query_time);
  EXPECT_EQ(failure_code(o), "SignatureDoesNotMatch");
  EXPECT_EQ(o.failure->message.find("5250297783"), std::string::npos);  // never shows a signature
}

TEST(sigv4, a_servers_key_cache_gives_the_same_verdicts_and_never_serves_one_secrets_key_for_another) {
  sigv4::signing_keys cache;
  const auto keys = example_keys();
  const botocore_request r;
  for (int i = 0; i < 2; ++i) {  // derived, then from the cache
    EXPECT_EQ(failure_code(verify_sigv4(r.view(), keys, query_time, "sqs", &cache)), "accepted");
    botocore_request changed;
    changed.body += "&x=1";
    EXPECT_EQ(failure_code(verify_sigv4(changed.view(), keys, query_time, "sqs", &cache)),
              "SignatureDoesNotMatch");
  }
  // The same access key id with another secret (a reloaded file) misses the cache.
  const auto wrong = credential_store::parse("AKID1 secret/two\n");
  EXPECT_EQ(failure_code(verify_sigv4(r.view(), wrong, query_time, "sqs", &cache)), "SignatureDoesNotMatch");
  // Past its 256 keys it starts afresh and stays right.
  for (int day = 1; day <= 300; ++day) {
    const auto date = fmt::format("2026{:02}{:02}", 1 + day % 12, 1 + day % 28);
    const auto region = fmt::format("r{}", day);
    EXPECT_EQ(cache.key("s", date, region, "sqs"), sigv4::signing_key("s", date, region, "sqs")) << day;
  }
  EXPECT_EQ(failure_code(verify_sigv4(r.view(), keys, query_time, "sqs", &cache)), "accepted");
}

TEST(sigv4, refuses_a_request_dated_more_than_15_minutes_from_the_clock_either_way) {
  const auto keys = example_keys();
  const botocore_request r;
  EXPECT_EQ(failure_code(verify_sigv4(r.view(), keys, query_time + 14min)), "accepted");
  EXPECT_EQ(failure_code(verify_sigv4(r.view(), keys, query_time - 14min)), "accepted");
  EXPECT_EQ(failure_code(verify_sigv4(r.view(), keys, query_time + 20min)), "RequestExpired");
  EXPECT_EQ(failure_code(verify_sigv4(r.view(), keys, query_time - 16min)), "RequestExpired");
}

// Found by fuzz/sigv4_verify: a date in a year beyond the clock's nanosecond
// range (about 1678..2262) overflowed, and wrapped into the window. Such a
// date, however well signed, is RequestExpired; the check runs before the key.
TEST(sigv4, refuses_dates_centuries_away_without_overflow) {
  const auto keys = example_keys();
  for (const char* date : {"26111202T100000Z", "14421202T100000Z", "99991231T235959Z", "00000101T000000Z"}) {
    SCOPED_TRACE(date);
    botocore_request r;
    r.headers[2].second = date;
    auto& auth = r.headers[3].second;
    auth.replace(auth.find("20261202"), 8, std::string(date, 8));
    EXPECT_EQ(failure_code(verify_sigv4(r.view(), keys, query_time)), "RequestExpired");
  }
}

TEST(sigv4, refuses_an_unknown_key_and_a_missing_or_malformed_authorization) {
  const auto keys = credential_store::parse("OTHER secret/one\n");
  const botocore_request r;
  EXPECT_EQ(failure_code(verify_sigv4(r.view(), keys, query_time)), "InvalidClientTokenId");
  botocore_request none;
  none.headers.pop_back();
  EXPECT_EQ(failure_code(verify_sigv4(none.view(), keys, query_time)), "MissingAuthenticationToken");
  for (const std::string bad :
       {"AWS4-HMAC-SHA1 Credential=a/b/c/sqs/aws4_request, SignedHeaders=host, Signature=00",
        "AWS4-HMAC-SHA256 Credential=AKID1/20261202/eu-west-1/sqs/aws4_request",
        "AWS4-HMAC-SHA256 Credential=AKID1/20261202/sqs/aws4_request, SignedHeaders=host, "
        "Signature=00",
        "AWS4-HMAC-SHA256 Credential=AKID1/20261202/eu-west-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=00",
        "AWS4-HMAC-SHA256 Credential=AKID1/20261202/eu-west-1/sqs/aws4_request, "
        "SignedHeaders=x-amz-date, Signature=00",
        "AWS4-HMAC-SHA256 Credential=AKID1/20261203/eu-west-1/sqs/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=00"}) {
    botocore_request m;
    m.headers.back().second = bad;
    EXPECT_EQ(failure_code(verify_sigv4(m.view(), example_keys(), query_time)), "IncompleteSignature") << bad;
  }
}

TEST(sigv4, canonicalizes_the_query_as_aws_does_sorted_and_reencoded) {
  const headers_t h{{"Host", "h"}};
  const auto c = sigv4::canonical_request({"GET", "/a b", "b=2&a=x+y&a=%7e", &h, ""}, {"host"}, "HASH");
  EXPECT_EQ(c, "GET\n/a%20b\na=x%20y&a=~&b=2\nhost:h\n\nhost\nHASH");
}

TEST(credentials, refuse_a_malformed_line_a_bad_account_and_a_duplicate_key_naming_the_line) {
  const auto code_of = [](const char* text) {
    try {
      (void)credential_store::parse(text);
      return std::string("parsed");
    } catch (const error& e) {
      EXPECT_EQ(std::string(e.what()).find("s3cr3t"), std::string::npos) << e.what();
      return std::string(to_string(e.code())) + " " + e.what();
    }
  };
  EXPECT_NE(code_of("ONLYKEY\n").find("invalid_argument credentials line 1"), std::string::npos);
  EXPECT_NE(code_of("# c\nK s3cr3t 1234\n").find("line 2: the account must be 12 digits"), std::string::npos);
  EXPECT_NE(code_of("K s3cr3t\nK s3cr3t\n").find("line 2: access key K appears twice"), std::string::npos);
  EXPECT_EQ(credential_store::parse("").size(), 0U);
}

}  // namespace
}  // namespace spool::serve
