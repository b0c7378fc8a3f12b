// The queue attributes SQS defines: which a queue may set, their ranges and
// defaults, and the ones computed when read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "spool/mq/catalog.hpp"

namespace spool::serve::sqs {

// Checks attributes for a queue (a FIFO queue's when fifo). Throws
// sqs::error: InvalidAttributeName for a name SQS does not define (or one
// only computed, or a FIFO attribute on a standard queue),
// InvalidAttributeValue for a value out of range, InvalidParameterValue for a
// FifoQueue that disagrees with the name or a malformed RedrivePolicy.
void check_queue_attributes(const std::map<std::string, std::string>& attributes, bool fifo);

// A queue's RedrivePolicy: after max_receive_count receives a message moves
// to the dead-letter queue target_name of account target_account.
struct redrive_policy {
  std::string target_account, target_name;
  std::int64_t max_receive_count = 0;
};
// Parses a RedrivePolicy value; InvalidParameterValue when malformed.
[[nodiscard]] redrive_policy parse_redrive_policy(const std::string& text);
// The queue's policy, when it has one.
[[nodiscard]] std::optional<redrive_policy> redrive_policy_of(const mq::catalog_entry& e);

// The value a queue has for a settable attribute: its own, or SQS's default.
[[nodiscard]] std::string effective_attribute(const mq::catalog_entry& e, const std::string& name);
[[nodiscard]] std::int64_t effective_int(const mq::catalog_entry& e, const std::string& name);

// Every settable attribute with its default.
[[nodiscard]] const std::map<std::string, std::string>& attribute_defaults();
// Whether SQS defines the attribute name (settable or computed, "All" too).
[[nodiscard]] bool is_known_attribute(const std::string& name);
// The names GetQueueAttributes computes (counts, timestamps, the ARN).
[[nodiscard]] bool is_computed_attribute(const std::string& name);

}  // namespace spool::serve::sqs
