// The op model's JSON form (op-queue.md §3.1) and status names.
#include <fmt/format.h>

#include "ops/time.hpp"
#include "spool/error.hpp"
#include "spool/ops/op.hpp"

namespace spool::ops {

std::string_view to_string(op_status s) noexcept {
  switch (s) {
    case op_status::pending: return "pending";
    case op_status::running: return "running";
    case op_status::done: return "done";
    case op_status::failed: return "failed";
    case op_status::cancelled: return "cancelled";
    case op_status::unknown: return "unknown";
  }
  return "unknown";
}

op_status parse_status(std::string_view text) noexcept {
  for (auto s : {op_status::pending, op_status::running, op_status::done, op_status::failed, op_status::cancelled}) {
    if (text == to_string(s)) return s;
  }
  return op_status::unknown;
}

nlohmann::json to_json(const op& o) {
  nlohmann::json j;
  j["id"] = o.id;
  j["type"] = o.type;
  j["payload"] = o.payload;
  j["status"] = o.status == op_status::unknown ? o.status_text : std::string(to_string(o.status));
  j["priority"] = o.priority;
  j["attempts"] = o.attempts;
  j["max_attempts"] = o.max_attempts;
  if (!o.last_error.empty()) j["last_error"] = o.last_error;
  j["enqueued_at"] = format_time(o.enqueued_at);
  if (o.started_at) j["started_at"] = format_time(*o.started_at);
  if (o.finished_at) j["finished_at"] = format_time(*o.finished_at);
  if (o.not_before) j["not_before"] = format_time(*o.not_before);
  if (o.dedup_key) j["dedup_key"] = *o.dedup_key;
  if (o.lease_owner) j["lease_owner"] = *o.lease_owner;
  if (o.heartbeat_at) j["heartbeat_at"] = format_time(*o.heartbeat_at);
  if (o.defect) j["defect"] = *o.defect;
  return j;
}

namespace {

[[noreturn]] void bad(std::string_view key, std::string_view why) {
  throw error(errc::invalid_argument, fmt::format("op JSON: \"{}\" {}", key, why));
}

const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string string_of(const nlohmann::json& j, const char* key, bool required) {
  const auto* v = member(j, key);
  if (v == nullptr) {
    if (required) bad(key, "is missing");
    return {};
  }
  if (!v->is_string()) bad(key, "must be a string");
  return v->get<std::string>();
}

std::int32_t int_of(const nlohmann::json& j, const char* key, std::int32_t fallback) {
  const auto* v = member(j, key);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer()) bad(key, "must be an integer");
  const auto n = v->get<std::int64_t>();
  if (n < INT32_MIN || n > INT32_MAX) bad(key, "is out of the int32 range");
  return static_cast<std::int32_t>(n);
}

std::optional<time_point> time_of(const nlohmann::json& j, const char* key) {
  const auto s = string_of(j, key, false);
  if (s.empty()) return std::nullopt;
  auto t = detail::try_parse_time(s);
  if (!t) bad(key, fmt::format("is not an RFC 3339 time: \"{}\"", s.substr(0, 64)));
  return t;
}

std::optional<std::string> opt_string(const nlohmann::json& j, const char* key) {
  if (member(j, key) == nullptr) return std::nullopt;
  return string_of(j, key, false);
}

}  // namespace

op op_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw error(errc::invalid_argument, "op JSON must be an object");
  op o;
  o.id = string_of(j, "id", true);
  o.type = string_of(j, "type", true);
  if (const auto* p = member(j, "payload")) {
    if (!p->is_object()) bad("payload", "must be an object");
    o.payload = *p;
  }
  o.status_text = string_of(j, "status", false);
  if (o.status_text.empty()) o.status_text = "pending";
  o.status = parse_status(o.status_text);
  o.priority = int_of(j, "priority", 0);
  o.attempts = int_of(j, "attempts", 0);
  o.max_attempts = int_of(j, "max_attempts", 3);
  o.last_error = string_of(j, "last_error", false);
  if (auto t = time_of(j, "enqueued_at")) o.enqueued_at = *t;
  o.started_at = time_of(j, "started_at");
  o.finished_at = time_of(j, "finished_at");
  o.not_before = time_of(j, "not_before");
  o.dedup_key = opt_string(j, "dedup_key");
  o.lease_owner = opt_string(j, "lease_owner");
  o.heartbeat_at = time_of(j, "heartbeat_at");
  o.defect = opt_string(j, "defect");
  return o;
}

}  // namespace spool::ops
