#include "spool/version.hpp"

#include "common/version_stamp.hpp"

namespace spool {

version_info version() noexcept { return {detail::release, detail::source_commit}; }

std::string version_line() {
  const auto v = version();
  return "spool " + std::string(v.number) + " (commit " + std::string(v.commit) + ")";
}

}  // namespace spool
