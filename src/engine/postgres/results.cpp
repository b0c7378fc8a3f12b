// Reading a libpq result: its rows as text, and what a translated error was.
#include "engine/postgres/connection.hpp"
#include "spool/error.hpp"

namespace spool::pg::detail {

std::vector<row> rows_of(const PGresult* res) {
  std::vector<row> rows;
  const int n = PQntuples(res);
  const int cols = PQnfields(res);
  rows.reserve(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    row out;
    out.reserve(static_cast<std::size_t>(cols));
    for (int c = 0; c < cols; ++c) {
      if (PQgetisnull(res, r, c)) {
        out.emplace_back(std::nullopt);
      } else {
        out.emplace_back(
            std::string(PQgetvalue(res, r, c), static_cast<std::size_t>(PQgetlength(res, r, c))));
      }
    }
    rows.push_back(std::move(out));
  }
  return rows;
}

bool is_unique_violation(const spool::error& e) noexcept {
  return e.code() == errc::database_error && e.reason() == "unique_violation";
}

}  // namespace spool::pg::detail
