// The release and source commit, defined in the build tree's
// generated/version_stamp.cpp (cmake/version_stamp.cmake rewrites it at
// every build, only when the commit changed, so nothing else recompiles).
#pragma once

namespace spool::detail {
extern const char* const release;
extern const char* const source_commit;
}  // namespace spool::detail
