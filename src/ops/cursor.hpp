// Keyset cursors of list_after (op-queue.md §4.7): opaque URL-safe text
// holding the last row's (enqueued_at, id).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ops/store.hpp"

namespace spool::ops::detail {

[[nodiscard]] std::string encode_cursor(const cursor_key& key);
// nullopt for an empty cursor. Errors: invalid_argument for a malformed one.
[[nodiscard]] std::optional<cursor_key> decode_cursor(std::string_view cursor);

}  // namespace spool::ops::detail
