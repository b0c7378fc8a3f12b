// The console's sessions: cookie parsing, the cookie's attributes, constant-
// time compares, and the bound on live sessions.
#include <gtest/gtest.h>

#include "serve/console/sessions.hpp"

namespace spool::serve::console {

TEST(console_sessions, the_cookie_is_found_among_others_and_only_by_its_exact_name) {
  EXPECT_EQ(session_store::cookie_value("a=1; spool_console=abc; b=2"), "abc");
  EXPECT_EQ(session_store::cookie_value("spool_console=abc"), "abc");
  EXPECT_EQ(session_store::cookie_value("xspool_console=abc; spool_consolex=def"), "");
  EXPECT_EQ(session_store::cookie_value(""), "");
  EXPECT_EQ(session_store::cookie_value("spool_console"), "");
}

TEST(console_sessions, the_cookie_is_http_only_and_same_site_strict_and_secure_under_tls) {
  const auto plain = session_store::set_cookie("id", false);
  EXPECT_NE(plain.find("HttpOnly"), std::string::npos);
  EXPECT_NE(plain.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(plain.find("Secure"), std::string::npos);
  EXPECT_NE(session_store::set_cookie("id", true).find("; Secure"), std::string::npos);
  EXPECT_NE(session_store::clear_cookie(false).find("Max-Age=0"), std::string::npos);
}

TEST(console_sessions, a_session_is_found_by_its_cookie_until_it_is_closed) {
  session_store store;
  const auto s = store.open("console:alice");
  EXPECT_EQ(s.id.size(), 64u);
  EXPECT_EQ(s.csrf.size(), 64u);
  EXPECT_NE(s.id, s.csrf);
  const auto header = "spool_console=" + s.id;
  const auto found = store.find(header);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->user, "console:alice");
  EXPECT_EQ(found->csrf, s.csrf);
  EXPECT_FALSE(store.find("spool_console=" + std::string(64, '0')).has_value());
  store.close(header);
  EXPECT_FALSE(store.find(header).has_value());
}

TEST(console_sessions, beyond_the_bound_the_oldest_session_is_dropped) {
  session_store store;
  const auto first = store.open("first");
  for (std::size_t i = 0; i < session_store::max_sessions; ++i) (void)store.open("later");
  EXPECT_FALSE(store.find("spool_console=" + first.id).has_value());
}

TEST(console_sessions, secrets_compare_equal_only_when_identical) {
  EXPECT_TRUE(equal_secret("token", "token"));
  EXPECT_FALSE(equal_secret("token", "tokeN"));
  EXPECT_FALSE(equal_secret("token", "token2"));
  EXPECT_FALSE(equal_secret("", "x"));
  EXPECT_TRUE(equal_secret("", ""));
}

}  // namespace spool::serve::console
