// Reading rows as the engines return them (text or NULL per column) and
// binding optional text: shared by the stores of every capability.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "spool/database.hpp"

namespace spool::detail {

// A NULL column reads as 0. Throws std::invalid_argument / out_of_range on non-numbers.
inline std::int64_t to_i64(const std::optional<std::string>& s) { return s ? std::stoll(*s) : 0; }

inline std::optional<std::int64_t> to_opt_i64(const std::optional<std::string>& s) {
  return s ? std::optional<std::int64_t>(std::stoll(*s)) : std::nullopt;
}

// An absent value binds as SQL NULL.
inline param opt_text(const std::optional<std::string>& s) { return s ? param(*s) : param(nullptr); }

}  // namespace spool::detail
