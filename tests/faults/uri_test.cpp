// Multi-host PostgreSQL URIs (libpq's failover form) open as they are: Spool
// passes them whole to libpq and redacts only the password.
#include <gtest/gtest.h>

#include <string>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/mq/queue.hpp"

namespace spool::test {
namespace {

TEST(faults_uri, a_multi_host_uri_with_target_session_attrs_opens_postgres_and_shows_no_password) {
  const auto db = database::open(
      "postgresql://app:hunter2@10.0.0.1:5432,10.0.0.2:5433/orders?target_session_attrs=read-write");
  EXPECT_EQ(db.kind(), engine::postgres);
  EXPECT_EQ(db.display_name(),
            "postgresql://app:***@10.0.0.1:5432,10.0.0.2:5433/orders?target_session_attrs=read-write");
  EXPECT_EQ(database::open("postgres://h1:5432,h2/db?target_session_attrs=primary").display_name(),
            "postgres://h1:5432,h2/db?target_session_attrs=primary");
  EXPECT_EQ(redact_password("postgresql://u@h1:1,h2:2/db?password=pw&target_session_attrs=read-write"),
            "postgresql://u@h1:1,h2:2/db?password=***&target_session_attrs=read-write");
}

TEST(faults_uri, when_no_host_of_a_multi_host_uri_answers_the_call_is_unavailable_without_the_password) {
  auto db = database::open(
      "postgresql://app:hunter2@127.0.0.1:1,127.0.0.1:2/"
      "db?target_session_attrs=read-write&connect_timeout=1");
  mq::queue q(db, {.name = "q"});
  try {
    (void)q.poll(1);
    ADD_FAILURE() << "expected a connection failure";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable) << e.what();
    EXPECT_TRUE(e.retryable());
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    // libpq tried both hosts; the message says so.
    EXPECT_NE(std::string(e.what()).find("port 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace spool::test
