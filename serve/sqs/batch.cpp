#include "serve/sqs/batch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "serve/sqs/params.hpp"

namespace spool::serve::sqs {

using json = nlohmann::json;

json failed(const std::string& id, const error& e) {
  return {{"Id", id}, {"SenderFault", e.kind().sender}, {"Code", e.code()}, {"Message", e.what()}};
}

nlohmann::json batch_result(nlohmann::json&& ok, nlohmann::json&& bad) {
  nlohmann::json out = nlohmann::json::object();
  out["Successful"] = std::move(ok);
  out["Failed"] = std::move(bad);
  return out;
}

// The entries of a batch, checked as SQS checks them before any entry runs.
const json& batch_entries(const json& p) {
  if (!p.contains("Entries") || !p["Entries"].is_array() || p["Entries"].empty()) {
    throw error("EmptyBatchRequest", "There should be at least one entry in the request.");
  }
  const auto& entries = p["Entries"];
  if (entries.size() > max_batch) {
    throw error("TooManyEntriesInBatchRequest",
                fmt::format("Maximum number of entries per request are {}. You have sent {}.", max_batch,
                            entries.size()));
  }
  std::set<std::string> ids;
  for (const auto& entry : entries) {
    const auto id = entry.is_object() ? optional_string(entry, "Id") : std::nullopt;
    const bool ok = id && !id->empty() && id->size() <= 80 &&
                    std::all_of(id->begin(), id->end(),
                                [](unsigned char ch) { return std::isalnum(ch) || ch == '-' || ch == '_'; });
    if (!ok) throw error("InvalidBatchEntryId", "A batch entry id is 1 to 80 of [A-Za-z0-9_-].");
    if (!ids.insert(*id).second) throw error("BatchEntryIdsNotDistinct", fmt::format("Id {} repeated.", *id));
  }
  return entries;
}

// An error of the library on a receipt, as SQS names it.
}  // namespace spool::serve::sqs
