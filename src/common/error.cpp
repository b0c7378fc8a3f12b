#include "spool/error.hpp"

namespace spool {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::not_found: return "not_found";
    case errc::already_exists: return "already_exists";
    case errc::duplicate: return "duplicate";
    case errc::conflict: return "conflict";
    case errc::invalid_state: return "invalid_state";
    case errc::lease_lost: return "lease_lost";
    case errc::transaction_required: return "transaction_required";
    case errc::unauthorized: return "unauthorized";
    case errc::stopped: return "stopped";
    case errc::unavailable: return "unavailable";
    case errc::in_doubt: return "in_doubt";
    case errc::database_error: return "database_error";
  }
  return "unknown";
}

error::error(errc code, const std::string& message, std::string reason, std::string sqlstate)
    : error(code, message, std::move(reason), engine_facts{std::move(sqlstate), {}, 0}) {}

error::error(errc code, const std::string& message, std::string reason, engine_facts facts)
    : std::runtime_error(message),
      code_(code),
      reason_(reason.empty() ? std::string(to_string(code)) : std::move(reason)),
      facts_(std::move(facts)) {}

error::error(const error& cause, const std::string& message)
    : std::runtime_error(message), code_(cause.code_), reason_(cause.reason_), facts_(cause.facts_) {}

}  // namespace spool
