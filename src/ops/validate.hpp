// Validation of what callers hand the op queue (op-queue.md §3), the
// sanitising of outcome messages (§4.2) and the CSPRNG behind ids and lease
// tokens (§3.2). Logic only: no SQL.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/ops/op.hpp"

namespace spool::ops::detail {

// 2 × bytes lowercase hex characters from the operating system's CSPRNG
// (getrandom). Throws error(unavailable, entropy_unavailable) when the
// source fails; never falls back to a weaker generator.
[[nodiscard]] std::string random_hex(std::size_t bytes);

// A type, id, owner or queue filter: 1–255 bytes of UTF-8 without control
// characters. Throws error(invalid_argument) naming what and the value.
void check_name(std::string_view what, std::string_view value);

// A validated new_op, ready for either store.
struct insert_item {
  std::string id;
  std::string type;
  std::string payload;  // serialised JSON object
  std::int32_t priority = 0;
  std::int32_t max_attempts = 3;
  std::optional<time_point> not_before;
  std::optional<std::chrono::microseconds> delay;
  std::optional<std::string> dedup_key;
  bool caller_id = false;  // the caller supplied the id
};

// Validates every op (errors name the batch index when index_names is true),
// assigns ids and serialises payloads. Throws invalid_argument; nothing is
// written by a caller when it throws.
[[nodiscard]] std::vector<insert_item> prepare_batch(const std::vector<new_op>& ops, std::size_t max_payload_bytes,
                                                     bool index_names);

// The payload as stored: a JSON object serialised, or error(invalid_argument)
// (non-object, U+0000 in a string or key, invalid UTF-8, over max bytes).
[[nodiscard]] std::string encode_payload(const nlohmann::json& payload, std::size_t max_bytes);

}  // namespace spool::ops::detail
