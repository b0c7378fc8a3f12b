// The batch rules the batch actions share (SendMessageBatch,
// DeleteMessageBatch, ChangeMessageVisibilityBatch): 1 to 10 entries with
// distinct ids, each failing on its own in Failed.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/sqs/errors.hpp"

namespace spool::serve::sqs {

inline constexpr std::size_t max_batch = 10;

// One entry of Failed for error e.
[[nodiscard]] nlohmann::json failed(const std::string& id, const error& e);

// A batch action's answer: {"Successful": ok, "Failed": bad}, both moved in
// (an answer holds every body; copying it was a tenth of SendMessageBatch).
[[nodiscard]] nlohmann::json batch_result(nlohmann::json&& ok, nlohmann::json&& bad);

// The entries of a batch, checked as SQS checks them before any entry runs:
// EmptyBatchRequest, TooManyEntriesInBatchRequest, InvalidBatchEntryId,
// BatchEntryIdsNotDistinct.
[[nodiscard]] const nlohmann::json& batch_entries(const nlohmann::json& p);

}  // namespace spool::serve::sqs
