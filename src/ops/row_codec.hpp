// Decoding of stored rows into ops (op-queue.md §3.1). Every query that
// returns ops selects the same 16 columns in this order (PostgreSQL renders
// times as RFC 3339 UTC text; SQLite returns the stored text). A value that
// cannot be decoded never fails the call: it becomes the op's defect.
#pragma once

#include <vector>

#include "spool/database.hpp"
#include "spool/ops/op.hpp"

namespace spool::ops::detail {

// id, type, payload, status, priority, attempts, max_attempts, last_error,
// enqueued_at, started_at, finished_at, not_before, dedup_key, lease_owner,
// lease_token, heartbeat_at.
inline constexpr std::size_t op_columns = 16;

// Decodes columns [first, first + 16) of r. with_token: keep lease_token
// (only dequeue returns it).
[[nodiscard]] op decode_row(const row& r, bool with_token, std::size_t first = 0);

}  // namespace spool::ops::detail
