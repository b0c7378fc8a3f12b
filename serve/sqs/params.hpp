// Reading an SQS request's parameters (in the JSON protocol's shape) with
// the AWS errors for what is missing or out of range.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "serve/sqs/errors.hpp"

namespace spool::serve::sqs {

// A required string member. MissingParameter when absent, InvalidParameterValue when not a string.
[[nodiscard]] std::string required_string(const nlohmann::json& p, std::string_view name);
// An optional string member.
[[nodiscard]] std::optional<std::string> optional_string(const nlohmann::json& p, std::string_view name);
// An optional integer member in [lo, hi] (a string of digits is accepted too,
// as attribute values are strings). InvalidParameterValue otherwise.
[[nodiscard]] std::optional<std::int64_t> optional_int(const nlohmann::json& p, std::string_view name,
                                                       std::int64_t lo, std::int64_t hi);
// An integer in text (a queue attribute's value) in [lo, hi], or InvalidAttributeValue naming it.
[[nodiscard]] std::int64_t attribute_int(std::string_view name, const std::string& value, std::int64_t lo,
                                         std::int64_t hi);

// A queue URL's last two path segments: the account and the queue name.
struct queue_ref {
  std::string account;
  std::string name;
};
// Parses a QueueUrl (only its path counts: clients reach a server by many
// names). QueueDoesNotExist when it is no URL of a queue.
[[nodiscard]] queue_ref parse_queue_url(std::string_view url);

// A queue ARN, arn:aws:sqs:REGION:ACCOUNT:NAME (any region); nullopt when malformed.
[[nodiscard]] std::optional<queue_ref> parse_queue_arn(std::string_view arn);
// A message attribute's data type without its custom suffix ("Number.int" → "Number").
[[nodiscard]] inline std::string attribute_base_type(const std::string& data_type) {
  return data_type.substr(0, data_type.find('.'));
}
// SQS's queue name rule: 1 to 80 of [A-Za-z0-9_-], with ".fifo" at the end of a FIFO queue's.
[[nodiscard]] bool valid_queue_name(std::string_view name) noexcept;

// SQS's message text rule: valid UTF-8 of #x9, #xA, #xD, #x20-#xD7FF,
// #xE000-#xFFFD and #x10000-#x10FFFF only.
[[nodiscard]] bool valid_message_text(std::string_view text) noexcept;

}  // namespace spool::serve::sqs
