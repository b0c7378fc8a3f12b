// Shared helpers of the libFuzzer targets: a check that aborts (so libFuzzer
// records the input as a crash) and the rule that only spool::error may leave
// the library on bad input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "spool/error.hpp"

namespace spool::fuzz {

// Aborts with the broken property; libFuzzer saves the input as crash-*.
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz property broken: %s\n", what);
  std::abort();
}

inline void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

// A spool::error raised on bad input must carry a code and a message.
inline void check_error(const spool::error& e, spool::errc expected) {
  check(e.code() == expected, "spool::error with an unexpected code");
  check(std::string_view(e.what()).size() > 0, "spool::error without a message");
}

}  // namespace spool::fuzz
