// Decoding stored rows and translating outbox statement errors.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "outbox/store.hpp"
#include "outbox/text.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

std::string_view to_string(message_state s) noexcept {
  switch (s) {
    case message_state::pending: return "pending";
    case message_state::leased: return "leased";
    case message_state::delivered: return "delivered";
    case message_state::dead: return "dead";
  }
  return "pending";
}

message_state parse_message_state(std::string_view s) {
  if (s == "pending") return message_state::pending;
  if (s == "leased") return message_state::leased;
  if (s == "delivered") return message_state::delivered;
  if (s == "dead") return message_state::dead;
  throw error(errc::invalid_argument,
              fmt::format("state \"{}\" is not one of pending, leased, delivered, dead", s.substr(0, 64)),
              "invalid_message_state");
}

std::string_view to_string(replay_item_status s) noexcept {
  switch (s) {
    case replay_item_status::replayable: return "replayable";
    case replay_item_status::missing: return "missing";
    case replay_item_status::pending: return "pending";
    case replay_item_status::leased: return "leased";
  }
  return "missing";
}

std::string_view to_string(operation op) noexcept {
  switch (op) {
    case operation::claim: return "claim";
    case operation::extend: return "extend";
    case operation::deliver: return "deliver";
    case operation::retry: return "retry";
    case operation::dead: return "dead";
    case operation::release: return "release";
    case operation::replay: return "replay";
    case operation::prune: return "prune";
    case operation::archive: return "archive";
  }
  return "claim";
}

namespace {
std::string conflict_message(const std::vector<std::pair<std::string, replay_item_status>>& items) {
  std::string out = "replay refused, nothing changed:";
  for (const auto& [id, s] : items) {
    if (s == replay_item_status::replayable) continue;
    out += fmt::format(" {}={}", id, to_string(s));
  }
  return out;
}
}  // namespace

replay_conflict::replay_conflict(std::vector<std::pair<std::string, replay_item_status>> items)
    : error(errc::conflict, conflict_message(items), "replay_conflict"), items_(std::move(items)) {}

namespace detail {

std::int64_t host_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {
[[noreturn]] void malformed(std::string_view what) {
  throw error(errc::invalid_state, fmt::format("outbox row: {}", what), "malformed_row");
}
std::int64_t to_i64(const std::optional<std::string>& s, std::string_view what) {
  if (!s) malformed(fmt::format("{} is NULL", what));
  try {
    return std::stoll(*s);
  } catch (const std::exception&) {
    malformed(fmt::format("{} is not an integer", what));
  }
}
std::optional<time_point> opt_time(const std::optional<std::string>& s, std::string_view what) {
  if (!s) return std::nullopt;
  return from_micros(to_i64(s, what));
}
}  // namespace

std::map<std::string, std::string> decode_metadata(const std::string& text) {
  std::map<std::string, std::string> out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    malformed("metadata is not JSON");
  }
  if (!j.is_object()) malformed("metadata is not an object");
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) malformed("a metadata value is not a string");
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

std::string encode_metadata(const std::map<std::string, std::string>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : m) j[k] = v;
  return j.dump();
}

full_row decode_row(const row& r, std::size_t f) {
  if (r.size() < f + 22) malformed("too few columns");
  full_row out;
  auto& e = out.message;
  e.pos = position{static_cast<std::uint64_t>(std::stoull(r[f + 1].value_or("0"))), to_i64(r[f], "seq")};
  e.id = r[f + 2].value_or("");
  e.topic = r[f + 3].value_or("");
  e.payload = hex_decode(r[f + 4].value_or(""));
  const auto version = to_i64(r[f + 5], "payload_version");
  if (version < 1 || version > 65535) malformed("payload_version out of range");
  e.payload_version = static_cast<std::uint16_t>(version);
  e.metadata = decode_metadata(r[f + 6].value_or("{}"));
  e.ordering_key = r[f + 7].value_or("");
  e.idempotency_key = r[f + 8].value_or("");
  out.state = parse_message_state(r[f + 9].value_or(""));
  e.claim_count = static_cast<std::uint32_t>(to_i64(r[f + 10], "claim_count"));
  e.failure_count = static_cast<std::uint32_t>(to_i64(r[f + 11], "failure_count"));
  e.available_at = opt_time(r[f + 12], "available_at");
  e.created_at = opt_time(r[f + 13], "created_at");
  out.updated_at = from_micros(to_i64(r[f + 14], "updated_at"));
  out.lease_owner = r[f + 15];
  out.lease_token = r[f + 16];
  out.leased_until = opt_time(r[f + 17], "leased_until");
  out.delivered_at = opt_time(r[f + 18], "delivered_at");
  out.dead_lettered_at = opt_time(r[f + 19], "dead_lettered_at");
  out.last_error_code = r[f + 20];
  out.last_error = r[f + 21];
  return out;
}

void rethrow_translated() {
  try {
    throw;
  } catch (const error& e) {
    // By condition, as both engine translators name it (src/engine/*/).
    const engine_facts facts{e.sqlstate(), e.constraint(), e.extended_code()};
    if (e.reason() == "check_violation" || e.sqlstate() == "22003" || e.sqlstate() == "22008") {
      throw error(errc::invalid_argument, e.what(), "value_outside_bounds", facts);
    }
    if (e.reason() == "undefined_column") {
      throw error(errc::invalid_state, fmt::format("{} (run `spool migrate`)", e.what()), "schema_version_mismatch",
                  facts);
    }
    throw;
  }
}

}  // namespace detail
}  // namespace spool::outbox
