// spool::version() — which Spool a program runs: the release and the source
// commit the library was built from (what `spool --version` prints).
// Thread safety: safe from any thread; the values never change.
#pragma once

#include <string>
#include <string_view>

namespace spool {

struct version_info {
  std::string_view number;  // the release, "MAJOR.MINOR.PATCH"
  // The git commit of the sources (12 hex digits, "+dirty" when they had
  // uncommitted changes), "unknown" when built outside a git checkout.
  std::string_view commit;
};

// The library's version; never throws.
[[nodiscard]] version_info version() noexcept;

// "spool 0.1.0 (commit 0123456789ab)".
[[nodiscard]] std::string version_line();

}  // namespace spool
