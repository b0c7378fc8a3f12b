// TLS to PostgreSQL (issue 18, docs/SECURITY.md): a server of the test's own
// serves TLS with a CA of its own (tests/support/pg_server.sh, SPOOL_PG_TLS).
// sslmode=verify-full with that CA connects, and the session is encrypted; a
// CA that did not sign the server's certificate, or a host name the
// certificate does not carry, is refused before any query as
// unauthorized/tls_verify_failed, never retried as an outage.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

std::string run(const std::string& command) {
  const int rc = std::system((command + " >/dev/null 2>&1").c_str());
  if (rc != 0) throw std::runtime_error("`" + command + "` failed (" + std::to_string(rc) + ")");
  return {};
}

class pg_tls : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* script = std::getenv("SPOOL_TEST_PG_SCRIPT");
    ASSERT_NE(script, nullptr) << "SPOOL_TEST_PG_SCRIPT is not set (run through ctest)";
    script_ = script;
    run("SPOOL_PG_TLS=1 '" + script_ + "' start '" + dir_.path().string() + "'");
    std::ifstream(dir_.path() / "port") >> port_;
    ca_ = (dir_.path() / "tls" / "ca.pem").string();
  }
  void TearDown() override { run("'" + script_ + "' stop '" + dir_.path().string() + "'"); }

  [[nodiscard]] std::string uri(const std::string& host, const std::string& ca) const {
    return "postgresql://postgres@" + host + ":" + port_ + "/postgres?sslmode=verify-full&sslrootcert=" + ca;
  }

  // What opening and using the database at uri throws.
  static void expect_refused(const std::string& uri, const std::string& why) {
    try {
      auto db = database::open(uri);
      (void)db.exec("SELECT 1");
      ADD_FAILURE() << why << ": connected";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::unauthorized) << why << ": " << e.what();
      EXPECT_EQ(e.reason(), "tls_verify_failed") << why << ": " << e.what();
      EXPECT_FALSE(e.retryable()) << why;
      std::cout << why << ": " << e.what() << "\n";
    }
  }

  temp_dir dir_;
  std::string script_, port_, ca_;
};

TEST_F(pg_tls, verify_full_with_the_servers_ca_connects_encrypted_and_runs_the_queue) {
  auto db = database::open(uri("localhost", ca_));
  EXPECT_EQ(db.exec("SELECT ssl::text, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()").at(0).at(0),
            "true");
  spool::migrate(db);
  mq::queue q(db, {.name = "tls"});
  (void)q.publish(mq::message{.id = "over-tls"});
  const auto got = q.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].broker_message_id, "over-tls");
}

TEST_F(pg_tls, a_certificate_from_another_ca_is_refused_as_unauthorized) {
  temp_dir other;
  const auto other_ca = (other.path() / "ca.pem").string();
  run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj '/CN=another CA' "
      "-keyout '" +
      (other.path() / "ca.key").string() + "' -out '" + other_ca + "'");
  expect_refused(uri("localhost", other_ca), "another CA");
}

TEST_F(pg_tls, a_host_name_the_certificate_does_not_carry_is_refused_as_unauthorized) {
  // The certificate names localhost only; 127.0.0.1 is the same server.
  expect_refused(uri("127.0.0.1", ca_), "another host name");
}

// The suites' shared server serves no TLS: a URI that requires it is refused,
// never sent in the clear.
TEST(pg_tls_required, a_server_without_tls_is_refused_when_the_uri_requires_it) {
  try {
    auto db = database::open(pg_admin_uri() + "?sslmode=require");
    (void)db.exec("SELECT 1");
    ADD_FAILURE() << "connected without TLS";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), errc::unauthorized) << e.what();
    EXPECT_EQ(e.reason(), "tls_refused") << e.what();
    EXPECT_FALSE(e.retryable());
  }
}

}  // namespace
}  // namespace spool::test
