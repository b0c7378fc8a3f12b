// UUID generation: v4 for poll receipts, v7 (RFC 9562) for message ids.
#pragma once

#include <string>

namespace spool::detail {

// A random UUID v4, lowercase canonical 36-character form. Thread-safe.
[[nodiscard]] std::string uuid_v4();

// A UUID v7, monotonic within the process (ids sort in generation order, also
// within one millisecond and across a backwards clock step). Thread-safe: the
// process-wide monotonic state is the one piece of shared state it needs.
[[nodiscard]] std::string uuid_v7();

// True when s is 36 characters of 8-4-4-4-12 hexadecimal digits.
[[nodiscard]] bool is_uuid(std::string_view s) noexcept;

}  // namespace spool::detail
