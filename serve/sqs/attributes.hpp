// The queue attributes SQS defines: which a queue may set, their ranges and
// defaults, and the ones computed when read.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "spool/mq/catalog.hpp"

namespace spool::serve::sqs {

// Throws sqs::error: InvalidAttributeName for a name SQS does not define (or
// one only computed), InvalidAttributeValue for a value out of range, and
// UnsupportedOperation for FIFO queues (not served yet).
void check_queue_attributes(const std::map<std::string, std::string>& attributes);

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
