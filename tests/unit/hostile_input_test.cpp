// Regression tests for what the fuzz targets (fuzz/) found: secrets that
// redact_password let through in spellings libpq accepts, and op-queue list
// cursors that decoded to ids no op can have.
#include <gtest/gtest.h>

#include <string>

#include "ops/cursor.hpp"
#include "ops/store.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"

namespace {

using spool::redact_password;

TEST(redact_password, masks_a_password_after_a_tab) {
  EXPECT_EQ(redact_password("host=h\tpassword=secret"), "host=h\tpassword=***");
}

TEST(redact_password, masks_a_password_with_blanks_around_the_equals_sign) {
  EXPECT_EQ(redact_password("host=h password = secret dbname=d"), "host=h password = *** dbname=d");
}

TEST(redact_password, masks_all_of_a_quoted_password_with_an_escaped_quote) {
  EXPECT_EQ(redact_password("host=h password='se cr\\'et x' dbname=d"), "host=h password='***' dbname=d");
}

TEST(redact_password, masks_a_bare_password_with_an_escaped_blank) {
  EXPECT_EQ(redact_password("password=se\\ cret host=h"), "password=*** host=h");
}

TEST(redact_password, keeps_the_key_after_a_quoted_password_readable) {
  EXPECT_EQ(redact_password("password='a b'host=h"), "password='***'host=h");
}

TEST(redact_password, masks_the_ssl_key_password) {
  EXPECT_EQ(redact_password("host=h sslpassword=keypass"), "host=h sslpassword=***");
  EXPECT_EQ(redact_password("postgres://h/db?sslpassword=keypass"), "postgres://h/db?sslpassword=***");
}

TEST(redact_password, masks_a_uri_query_password_whose_key_is_percent_encoded) {
  EXPECT_EQ(redact_password("postgres://h/db?pass%77ord=secret&sslmode=disable"),
            "postgres://h/db?pass%77ord=***&sslmode=disable");
}

TEST(redact_password, leaves_an_ampersand_password_inside_a_quoted_value_to_that_value) {
  EXPECT_EQ(redact_password("password='u&password=x'er=u"), "password='***'er=u");
}

TEST(redact_password, masks_only_the_password_of_a_uri_whose_user_name_holds_password_equals) {
  EXPECT_EQ(redact_password("postgres://a=\fpassword=b:secret@h/db"), "postgres://a=\fpassword=b:***@h/db");
}

TEST(redact_password, masks_a_uri_inside_a_libpq_message) {
  EXPECT_EQ(redact_password("could not connect to postgres://u:secret@h/db: refused"),
            "could not connect to postgres://u:***@h/db: refused");
}

TEST(redact_password, keeps_a_uri_like_quoted_value_from_swallowing_the_next_password) {
  EXPECT_EQ(redact_password("dbname='x://u:a'password=b@c"), "dbname='x://u:a'password=***");
}

TEST(redact_password, shows_only_the_scheme_of_a_uri_that_masking_would_reshape_into_one_with_a_password) {
  // The first query value holds "/" and an extra "=", so libpq rejects the URI; masking it would
  // remove the "/" and make "&@" the end of a user name, and the last parameter a password.
  EXPECT_EQ(redact_password("postgresql://h?password=a://b=c&@host?password=secret"), "postgresql://***");
}

TEST(redact_password, still_masks_the_documented_forms) {
  EXPECT_EQ(redact_password("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
  EXPECT_EQ(redact_password("postgresql://h/db?user=u&password=secret"),
            "postgresql://h/db?user=u&password=***");
  EXPECT_EQ(redact_password("host=h password=secret dbname=d"), "host=h password=*** dbname=d");
  EXPECT_EQ(redact_password("could not connect: password=secret"), "could not connect: password=***");
  EXPECT_EQ(redact_password("sqlite:/var/lib/q.db"), "sqlite:/var/lib/q.db");
}

TEST(ops_cursor, a_cursor_whose_id_holds_a_nul_byte_is_malformed) {
  const std::string cursor =
      spool::ops::detail::encode_cursor({"2024-05-01T12:00:00Z", std::string("a\0b", 3)});
  try {
    (void)spool::ops::detail::decode_cursor(cursor);
    FAIL() << "decoded";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), spool::errc::invalid_argument);
  }
}

TEST(ops_cursor, a_cursor_whose_id_is_not_utf8_is_malformed) {
  const std::string cursor = spool::ops::detail::encode_cursor({"2024-05-01T12:00:00Z", "a\xff"});
  EXPECT_THROW((void)spool::ops::detail::decode_cursor(cursor), spool::error);
}

TEST(ops_cursor, a_cursor_round_trips_its_time_and_id) {
  const auto key = spool::ops::detail::decode_cursor(
      spool::ops::detail::encode_cursor({"2024-05-01T12:00:00.123456Z", "op-1"}));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->enqueued_at, "2024-05-01T12:00:00.123456Z");
  EXPECT_EQ(key->id, "op-1");
}

}  // namespace
