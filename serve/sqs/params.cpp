#include "serve/sqs/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "common/text/utf8.hpp"

namespace spool::serve::sqs {

namespace {
bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 18 &&
         std::all_of(s.begin() + (s[0] == '-' && s.size() > 1 ? 1 : 0), s.end(),
                     [](unsigned char c) { return std::isdigit(c); });
}
}  // namespace

std::string required_string(const nlohmann::json& p, std::string_view name) {
  const auto key = std::string(name);
  if (!p.contains(key))
    throw error("MissingParameter", fmt::format("The request must contain the parameter {}.", name));
  if (!p[key].is_string()) throw error("InvalidParameterValue", fmt::format("{} must be a string.", name));
  return p[key].get<std::string>();
}

std::optional<std::string> optional_string(const nlohmann::json& p, std::string_view name) {
  const auto key = std::string(name);
  if (!p.contains(key) || p[key].is_null()) return std::nullopt;
  if (!p[key].is_string()) throw error("InvalidParameterValue", fmt::format("{} must be a string.", name));
  return p[key].get<std::string>();
}

std::optional<std::int64_t> optional_int(const nlohmann::json& p, std::string_view name, std::int64_t lo,
                                         std::int64_t hi) {
  const auto key = std::string(name);
  if (!p.contains(key) || p[key].is_null()) return std::nullopt;
  std::int64_t v = 0;
  const auto& j = p[key];
  if (j.is_number_integer()) {
    v = j.get<std::int64_t>();
  } else if (j.is_string() && all_digits(j.get<std::string>())) {
    v = std::stoll(j.get<std::string>());
  } else {
    throw error("InvalidParameterValue", fmt::format("{} must be an integer.", name));
  }
  if (v < lo || v > hi) {
    throw error("InvalidParameterValue",
                fmt::format("Value {} for parameter {} is invalid. Reason: must be between {} and {}.", v,
                            name, lo, hi));
  }
  return v;
}

std::int64_t attribute_int(std::string_view name, const std::string& value, std::int64_t lo,
                           std::int64_t hi) {
  if (!all_digits(value) || std::stoll(value) < lo || std::stoll(value) > hi) {
    throw error(
        "InvalidAttributeValue",
        fmt::format("Invalid value for the parameter {}: must be an integer from {} to {}.", name, lo, hi));
  }
  return std::stoll(value);
}

bool valid_queue_name(std::string_view name) noexcept {
  std::string_view base = name;
  if (base.size() > 5 && base.substr(base.size() - 5) == ".fifo") base.remove_suffix(5);
  return !name.empty() && name.size() <= 80 && std::all_of(base.begin(), base.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_';
  });
}

queue_ref parse_queue_url(std::string_view url) {
  const auto fail = [&] { return error("QueueDoesNotExist", "The specified queue does not exist."); };
  const auto scheme = url.find("://");
  std::string_view path = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  if (scheme != std::string_view::npos) {
    const auto slash = path.find('/');
    if (slash == std::string_view::npos) throw fail();
    path.remove_prefix(slash);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const auto last = path.rfind('/');
  if (last == std::string_view::npos || last == 0) throw fail();
  const auto before = path.rfind('/', last - 1);
  if (before == std::string_view::npos) throw fail();
  queue_ref r{std::string(path.substr(before + 1, last - before - 1)), std::string(path.substr(last + 1))};
  if (r.account.size() != 12 || !all_digits(r.account) || !valid_queue_name(r.name)) throw fail();
  return r;
}

std::optional<queue_ref> parse_queue_arn(std::string_view arn) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const auto colon = arn.find(':', at);
    parts.push_back(arn.substr(at, colon == std::string_view::npos ? std::string_view::npos : colon - at));
    if (colon == std::string_view::npos) break;
    at = colon + 1;
  }
  if (parts.size() != 6 || parts[0] != "arn" || parts[2] != "sqs" || parts[4].size() != 12 ||
      !valid_queue_name(parts[5])) {
    return std::nullopt;
  }
  return queue_ref{std::string(parts[4]), std::string(parts[5])};
}

bool valid_message_text(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {  // most bodies are ASCII: printable, or a tab, a newline, a carriage return
      if (c < 0x20 && c != 0x9 && c != 0xA && c != 0xD) return false;
      ++i;
      continue;
    }
    // A well-formed sequence has no surrogate and nothing above U+10FFFF;
    // of what remains above U+007F, SQS refuses only U+FFFE and U+FFFF.
    const std::size_t n = spool::detail::utf8_sequence(text, i);
    if (n == 0) return false;
    const char32_t cp = spool::detail::utf8_code_point(text, i, n);
    if (cp == 0xFFFE || cp == 0xFFFF) return false;
    i += n;
  }
  return true;
}

}  // namespace spool::serve::sqs
