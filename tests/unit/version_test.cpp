// spool::version(): the release CMake was given and the commit of the sources.
#include "spool/version.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace spool::test {
namespace {

TEST(version, names_the_release_of_the_build) {
  EXPECT_EQ(spool::version().number, SPOOL_TEST_EXPECTED_VERSION);
}

TEST(version, names_the_twelve_digit_commit_of_a_checkout_possibly_dirty) {
  std::string commit(spool::version().commit);
  if (!SPOOL_TEST_SOURCE_IS_GIT_CHECKOUT) {
    EXPECT_EQ(commit, "unknown") << "built outside a git checkout";
    return;
  }
  if (commit.ends_with("+dirty")) commit.resize(commit.size() - 6);
  ASSERT_EQ(commit.size(), 12u) << spool::version().commit;
  for (const char c : commit) EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(c))) << commit;
}

TEST(version, the_version_line_holds_both) {
  const auto v = spool::version();
  EXPECT_EQ(spool::version_line(),
            "spool " + std::string(v.number) + " (commit " + std::string(v.commit) + ")");
}

}  // namespace
}  // namespace spool::test
