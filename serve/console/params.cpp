#include <fmt/format.h>

#include <charconv>

#include "common/text/rfc3339.hpp"
#include "common/text/utf8.hpp"
#include "serve/console/api.hpp"

namespace spool::serve::console {

namespace {

api_error too_long(const std::string& name, std::size_t max) {
  return {400, "too_long", fmt::format("{} is over {} bytes", name, max)};
}

constexpr const char* redacted = "***";

void redact(nlohmann::json& v) {
  if (v.is_object()) {
    for (auto& [k, member] : v.items()) {
      if (k == "authToken" || k == "signingSecret") {
        member = redacted;
      } else {
        redact(member);
      }
    }
  } else if (v.is_array()) {
    for (auto& e : v) redact(e);
  }
}

}  // namespace

std::string text_param(const http_request& r, const std::string& name, std::size_t max_bytes) {
  auto v = r.param(name);
  if (v.size() > max_bytes) throw too_long(name, max_bytes);
  return v;
}

std::size_t limit_param(const http_request& r) {
  const auto text = text_param(r, "limit", 8);
  if (text.empty()) return 50;
  std::size_t n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') throw api_error{400, "invalid_limit", "limit must be a number from 1 to 500"};
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  if (n < 1 || n > 500) throw api_error{400, "invalid_limit", "limit must be a number from 1 to 500"};
  return n;
}

std::string text_member(const nlohmann::json& body, const std::string& name, bool required,
                        std::size_t max_bytes) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) {
    if (required) throw api_error{400, "missing_member", fmt::format("\"{}\" is required", name)};
    return {};
  }
  if (!it->is_string()) throw api_error{400, "invalid_member", fmt::format("\"{}\" must be a string", name)};
  auto v = it->get<std::string>();
  if (v.size() > max_bytes) throw too_long(name, max_bytes);
  if (required && v.empty())
    throw api_error{400, "missing_member", fmt::format("\"{}\" must not be empty", name)};
  return v;
}

std::vector<std::string> ids_member(const nlohmann::json& body, const std::string& name, std::size_t max) {
  std::vector<std::string> out;
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return out;
  if (!it->is_array())
    throw api_error{400, "invalid_member", fmt::format("\"{}\" must be an array of ids", name)};
  if (it->size() > max)
    throw api_error{400, "too_many", fmt::format("\"{}\" holds more than {} ids", name, max)};
  for (const auto& e : *it) {
    if (!e.is_string() || e.get_ref<const std::string&>().empty() ||
        e.get_ref<const std::string&>().size() > 1000) {
      throw api_error{400, "invalid_member",
                      fmt::format("\"{}\" must hold non-empty ids of up to 1,000 bytes", name)};
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

void put_payload(nlohmann::json& out, const std::string& payload) {
  auto parsed = nlohmann::json::parse(payload, nullptr, false);
  if (parsed.is_discarded()) {
    // A poison row: its bytes as text, invalid UTF-8 replaced for display.
    out["payload"] = spool::detail::utf8_repair(payload, false);
    out["payload_json"] = false;
    return;
  }
  redact(parsed);
  out["payload"] = parsed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  out["payload_json"] = true;
}

void redact_secrets(nlohmann::json& v) { redact(v); }

std::optional<std::int64_t> seconds_param(const http_request& r, const std::string& name, std::int64_t max) {
  const auto text = text_param(r, name, 16);
  if (text.empty()) return std::nullopt;
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0 || n > max) {
    throw api_error{400, "invalid_parameter", fmt::format("{} must be whole seconds in 0..{}", name, max)};
  }
  return n;
}

std::string time_text(std::int64_t unix_seconds) {
  return spool::detail::format_rfc3339(spool::detail::micros_time(std::chrono::seconds(unix_seconds)),
                                       {.digits = spool::detail::rfc3339_style::fraction::none});
}

}  // namespace spool::serve::console
