// The rules of FIFO queues (names ending in .fifo): a MessageGroupId on every
// send, a deduplication id (explicit, or the body's SHA-256 with
// ContentBasedDeduplication) remembered for five minutes, and no per-message
// delay. Order within a group is mq::queue's strict group order; sequence
// numbers and deduplication are mq::catalog's (record_fifo_send).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "spool/mq/catalog.hpp"
#include "spool/mq/message.hpp"

namespace spool::serve::sqs {

// How long SQS remembers a deduplication id.
inline constexpr std::chrono::minutes dedup_window{5};

// Whether a queue name is a FIFO queue's.
[[nodiscard]] bool is_fifo_name(const std::string& name) noexcept;

// A FIFO send's identity, read from one SendMessage (or batch entry).
struct fifo_send {
  std::string group;
  std::string dedup_id;   // as the caller gave it, or the body's SHA-256
  std::string dedup_key;  // what is remembered: per queue, or per group under DeduplicationScope=messageGroup
};

// Reads and checks MessageGroupId and MessageDeduplicationId for queue e.
// Throws sqs::error: MissingParameter (no group), InvalidParameterValue (bad
// characters or length, a per-message DelaySeconds, no dedup id without
// ContentBasedDeduplication).
[[nodiscard]] fifo_send fifo_send_of(const nlohmann::json& p, const mq::catalog_entry& e, const std::string& body);

// Marks m as the FIFO send s with its sequence number: the group column, and
// the members sqsDeduplicationId and sqsSequenceNumber (read back by fifo_attributes).
void stamp_fifo(mq::message& m, const fifo_send& s, std::int64_t sequence_number);

// The FIFO system attributes a received message carries, when it has them.
struct fifo_stamp {
  std::optional<std::string> dedup_id, sequence_number;
};
[[nodiscard]] fifo_stamp fifo_stamp_of(const mq::message& m);

}  // namespace spool::serve::sqs
