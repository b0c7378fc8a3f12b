// Writing an answer's JSON without nlohmann's serializer: the same bytes as
// dump(-1, ' ', false, replace) in less than half the instructions (docs/SQS.md,
// "Where a message's instructions go"). An answer is mostly long strings
// (bodies, receipts) that need no escape and are copied in runs.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace spool::serve::sqs {

// Appends v as compact JSON to out, byte for byte what
// v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) gives:
// strings keep their UTF-8, invalid UTF-8 becomes U+FFFD. Pure; no errors.
void append_json(std::string& out, const nlohmann::json& v);

// append_json into a new string.
[[nodiscard]] std::string to_json_text(const nlohmann::json& v);

}  // namespace spool::serve::sqs
