// The PostgreSQL parameter encodings the op queue's PostgreSQL files share
// (store_postgres.cpp, store_postgres_insert.cpp): text[] literals and booleans.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spool/database.hpp"

namespace spool::ops::detail {

std::string text_array(const std::vector<std::string>& values);
std::string text_array(const std::vector<std::optional<std::string>>& values);
// The same arrays in binary format (pg::detail::binary_text_array), for a
// parameter marked in the statement's binary_mask.
std::string binary_text_array(const std::vector<std::string>& values, bool utf8);
std::string binary_text_array(const std::vector<std::optional<std::string>>& values, bool utf8);
param boolean(bool b);

}  // namespace spool::ops::detail
