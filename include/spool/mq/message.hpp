// spool::mq::message — the wire message stored in queue_messages.payload,
// and its codec (message-queue.md §3). Thread safety: plain values; the free
// functions are pure and safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace spool::mq {

// One unknown top-level member the decoder read: its key and its value as
// JSON text (numbers spelled as read, so 64-bit integers survive exactly).
struct extra_member {
  std::string key;
  std::string json;
  friend bool operator==(const extra_member&, const extra_member&) = default;
};

// A message attribute as SQS carries it: a name, a data type ("String",
// "Number", "Binary", or one of these with a custom suffix such as
// "Number.int"), and the value (the raw bytes for a Binary type).
struct message_attribute {
  std::string name;
  std::string data_type;
  std::string value;
  friend bool operator==(const message_attribute&, const message_attribute&) = default;
};

// The flat camelCase message of message-queue.md §3.1. Unset optionals are
// absent on the wire, never null.
struct message {
  std::string id;
  std::string pool_code;
  std::optional<std::string> auth_token;
  std::optional<std::string> signing_secret;
  std::string mediation_type;
  std::string mediation_target;
  std::optional<std::string> message_group_id;
  bool high_priority = false;
  std::string dispatch_mode;
  // The application's data, for messages that carry one (every message the
  // SQS API sends): on the wire the members "body" (a string) and
  // "messageAttributes" ({"NAME":{"dataType":…,"stringValue"|"binaryValue":…}},
  // binary values in base64), written after the nine keys. Legacy readers see
  // them as unknown members (docs/COMPATIBILITY.md). A "body" that is no
  // string, or attributes of another shape, stay in extra.
  std::optional<std::string> body;
  std::vector<message_attribute> attributes;
  // Unknown members, in the order read; written after the nine keys. An unknown key read twice keeps the
  // position of its first occurrence and its last value.
  std::vector<extra_member> extra;
  friend bool operator==(const message&, const message&) = default;
};

// Encodes a message as its wire JSON: the nine keys in table order, the body
// and attributes, then extra. Throws spool::error(invalid_argument) naming
// the field when a string is not valid UTF-8 (a binary attribute may hold any
// bytes), when an extra key folds onto a known key or repeats "body" or
// "messageAttributes" while those are set, or when an extra value is not
// valid JSON.
[[nodiscard]] std::string encode(const message& m);

// The outcome of decoding: a message, or the poison reason (the rule broken
// and the byte offset; never more payload than the offending character).
struct decode_result {
  std::optional<message> value;
  std::string error;  // empty when value is set
  [[nodiscard]] bool ok() const noexcept { return value.has_value(); }
};

// Decodes under Go's lenient rule (message-queue.md §3.2). Never throws on
// bad input: poison is reported in decode_result::error.
[[nodiscard]] decode_result decode(std::string_view payload);

// Strict validation of a decoded message (§3.3); returns the quarantine reason
// ("strict: empty id", ...) or an empty string when the message passes.
// row_id is the queue row's id.
[[nodiscard]] std::string strict_violation(const message& m, std::string_view row_id);

// Cuts text to at most max_bytes on a UTF-8 code-point boundary (§3.4).
[[nodiscard]] std::string truncate_utf8(std::string_view text, std::size_t max_bytes = 1000);

}  // namespace spool::mq
