// SQLSTATE and libpq failures → spool::error, in one cold place.
#include <fmt/format.h>

#include <cstring>

#include "engine/postgres/connection.hpp"
#include "spool/error.hpp"

namespace spool::pg::detail {

namespace {

std::string trimmed(const char* s) {
  std::string out = s ? s : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string field(const PGresult* res, int code) {
  const char* v = res ? PQresultErrorField(res, code) : nullptr;
  return v ? v : "";
}

}  // namespace

void throw_connect_error(const std::string& display, std::string msg) {
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  msg = fmt::format("cannot connect to {}: {}", display, redact_password(msg));
  // libpq reports TLS verification only as text (no SQLSTATE: the server
  // never answered). A server that cannot prove it is the one named is not
  // a passing outage: retrying cannot help, and it may be an impostor.
  if (msg.find("certificate verify failed") != std::string::npos ||
      msg.find("does not match host name") != std::string::npos ||
      msg.find("server certificate for") != std::string::npos) {
    throw error(errc::unauthorized, msg, "tls_verify_failed");
  }
  if (msg.find("server does not support SSL") != std::string::npos) {
    throw error(errc::unauthorized, msg, "tls_refused");
  }
  throw error(errc::unavailable, msg, "connect_failed");
}

void throw_error(PGconn* conn, const PGresult* res, intent what, std::string_view context) {
  const std::string sqlstate = field(res, PG_DIAG_SQLSTATE);
  std::string msg = trimmed(res ? PQresultErrorMessage(res) : nullptr);
  if (msg.empty()) msg = trimmed(PQerrorMessage(conn));
  msg = redact_password(msg);
  const bool lost = conn == nullptr || PQstatus(conn) != CONNECTION_OK;

  // A connection that died under a statement: the server may have applied a
  // write (or a COMMIT) before the link broke, so a write is in doubt.
  if (lost || starts_with(sqlstate, "08") || sqlstate == "57P01" || sqlstate == "57P02" ||
      sqlstate == "57P03") {
    if (what == intent::write) {
      throw error(errc::in_doubt, fmt::format("connection lost during {}; outcome unknown: {}", context, msg),
                  "connection_lost", sqlstate);
    }
    throw error(errc::unavailable, fmt::format("connection lost during {}: {}", context, msg),
                "connection_lost", sqlstate);
  }
  if (sqlstate == "40001" || sqlstate == "40P01") {
    throw error(errc::unavailable, msg, sqlstate == "40001" ? "serialization_failure" : "deadlock", sqlstate);
  }
  if (sqlstate == "55P03") throw error(errc::unavailable, msg, "lock_timeout", sqlstate);
  if (sqlstate == "57014") throw error(errc::unavailable, msg, "statement_timeout", sqlstate);
  if (sqlstate == "53300" || sqlstate == "53400")
    throw error(errc::unavailable, msg, "too_many_connections", sqlstate);
  // A full disk (53100) or memory (53200) fails the statement, and with it
  // the transaction: nothing was written, and the same call succeeds once
  // the server has room again (issue 17).
  if (sqlstate == "53100") throw error(errc::unavailable, msg, "disk_full", sqlstate);
  if (starts_with(sqlstate, "53")) throw error(errc::unavailable, msg, "insufficient_resources", sqlstate);
  if (sqlstate == "25P02") throw error(errc::invalid_state, msg, "transaction_aborted", sqlstate);
  if (sqlstate == "42P01" || sqlstate == "3F000") {
    throw error(errc::invalid_state, fmt::format("{} (run `spool migrate`)", msg), "schema_version_mismatch",
                sqlstate);
  }
  if (sqlstate == "25006") throw error(errc::invalid_state, msg, "not_writable", sqlstate);
  // A role without the grant (docs/SECURITY.md): not retryable, not a bug in Spool.
  if (sqlstate == "42501") throw error(errc::unauthorized, msg, "insufficient_privilege", sqlstate);
  // The conditions a capability maps by name; the same reasons come from the
  // SQLite translator, so callers never ask which engine failed.
  engine_facts facts{sqlstate, field(res, PG_DIAG_CONSTRAINT_NAME), 0};
  const char* reason = sqlstate == "23514"   ? "check_violation"
                       : sqlstate == "23505" ? "unique_violation"
                       : sqlstate == "42703" ? "undefined_column"
                                             : "database_error";
  throw error(errc::database_error, msg, reason, std::move(facts));
}

}  // namespace spool::pg::detail
