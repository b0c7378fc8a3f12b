// The legacy JSON queue configuration (message-queue.md §4).
#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/mq/queue.hpp"

namespace spool::mq {

namespace {

using json = nlohmann::json;

// The canonical key wins over its alias; null counts as absent.
const json* pick(const json& j, const char* key, const char* alias) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) return &*it;
  if (alias != nullptr) {
    it = j.find(alias);
    if (it != j.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

std::string string_field(const json& j, const char* key, const char* alias) {
  const json* v = pick(j, key, alias);
  if (v == nullptr) return {};
  if (!v->is_string())
    throw error(errc::invalid_argument, fmt::format("queue config: {} must be a string", key));
  return v->get<std::string>();
}

std::optional<std::uint32_t> uint32_field(const json& j, const char* key) {
  const json* v = pick(j, key, nullptr);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto n = v->get<std::uint64_t>();
    if (n <= std::numeric_limits<std::uint32_t>::max()) return static_cast<std::uint32_t>(n);
  } else if (v->is_number_integer()) {
    // negative
  } else if (!v->is_number()) {
    throw error(errc::invalid_argument, fmt::format("queue config: {} must be a number", key));
  }
  throw error(errc::invalid_argument,
              fmt::format("queue config: {} must be an integer in 0 … 4294967295, got {}", key, v->dump()));
}

}  // namespace

queue_config queue_config::from_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (52e3002;
    // found by fuzz/http_inputs).
    throw error(errc::invalid_argument, fmt::format("queue config is not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) throw error(errc::invalid_argument, "queue config must be a JSON object");
  queue_config c;
  c.queue_name = string_field(j, "queueName", "name");
  c.queue_uri = string_field(j, "queueUri", "uri");
  c.connections = uint32_field(j, "connections").value_or(1);
  // Absent or null: the legacy JSON default of 120 s. An explicit 0 stays 0
  // and means 30 s where it is used.
  c.visibility_timeout = uint32_field(j, "visibilityTimeout").value_or(120);
  return c;
}

std::string queue_config::to_json() const {
  json j = json::object();
  j["queueName"] = queue_name;
  j["queueUri"] = queue_uri;
  j["connections"] = connections;
  j["visibilityTimeout"] = visibility_timeout;
  return j.dump();
}

std::string queue_config::effective_name() const {
  // The name is stored in every row (queue_name) and shown by every tool: a
  // password in the URI must not end up there (SECURITY.md).
  return queue_name.empty() ? redact_password(queue_uri) : queue_name;
}

std::chrono::seconds queue_config::effective_visibility() const {
  return std::chrono::seconds(visibility_timeout == 0 ? 30 : visibility_timeout);
}

}  // namespace spool::mq
