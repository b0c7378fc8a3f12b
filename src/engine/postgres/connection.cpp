#include "engine/postgres/connection.hpp"

#include <fmt/format.h>

#include <charconv>

#include "spool/error.hpp"

namespace spool::pg::detail {

connection::connection(const std::string& conninfo, const std::string& display, int connect_timeout_s)
    : display_(display) {
  // Our defaults come first so that settings in the caller's URI override
  // them. The idle-in-transaction timeout keeps a crashed caller from holding
  // locks (and a snapshot) forever on Spool's own connections.
  const std::string timeout = std::to_string(connect_timeout_s);
  const char* keys[] = {"connect_timeout", "options", "application_name", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), "-c idle_in_transaction_session_timeout=600000", "spool",
                          conninfo.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr) throw error(errc::unavailable, "out of memory connecting to " + display_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn_);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    PQfinish(conn_);
    conn_ = nullptr;
    throw error(errc::unavailable, fmt::format("cannot connect to {}: {}", display_, redact_password(msg)),
                "connect_failed");
  }
  // Server notices ("relation already exists, skipping") are not errors; keep
  // them off the application's stderr.
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
}

connection::connection(PGconn* borrowed) : conn_(borrowed), owned_(false), display_("adopted connection") {}

connection::~connection() {
  if (owned_ && conn_ != nullptr) PQfinish(conn_);
}

bool connection::in_transaction() const noexcept {
  const auto s = PQtransactionStatus(conn_);
  return s == PQTRANS_INTRANS || s == PQTRANS_INERROR;
}

namespace {

std::string to_text(const param& p, bool& is_null) {
  is_null = false;
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          is_null = true;
          return {};
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return fmt::format("{}", v);
        } else {
          return v;
        }
      },
      p);
}

}  // namespace

result_ptr connection::exec(std::string_view sql, const std::vector<param>& params, intent what) {
  if (!healthy()) {
    throw error(errc::unavailable, fmt::format("connection to {} is not usable", display_), "connection_lost");
  }
  std::vector<std::string> texts(params.size());
  std::vector<const char*> ptrs(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    bool is_null = false;
    texts[i] = to_text(params[i], is_null);
    ptrs[i] = is_null ? nullptr : texts[i].c_str();
  }
  const std::string stmt(sql);
  result_ptr res(PQexecParams(conn_, stmt.c_str(), static_cast<int>(params.size()), nullptr, ptrs.data(),
                              nullptr, nullptr, 0));
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return res;
  throw_error(conn_, res.get(), what, "statement");
}

std::vector<row> connection::query(std::string_view sql, const std::vector<param>& params, intent what) {
  return rows_of(exec(sql, params, what).get());
}

void connection::exec_script(const std::string& sql) {
  result_ptr res(PQexec(conn_, sql.c_str()));
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) return;
  throw_error(conn_, res.get(), intent::write, "script");
}

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
        out.emplace_back(std::string(PQgetvalue(res, r, c), static_cast<std::size_t>(PQgetlength(res, r, c))));
      }
    }
    rows.push_back(std::move(out));
  }
  return rows;
}

std::string text_array(const std::vector<const std::string*>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    if (values[i] == nullptr) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char ch : *values[i]) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace spool::pg::detail
