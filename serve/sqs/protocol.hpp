// The two wire protocols of the SQS API, chosen per request as AWS does:
// AWS JSON 1.0 (X-Amz-Target: AmazonSQS.<Action>, what current SDKs send) and
// the query protocol (a form with Action=…, answered in XML, what older SDKs
// and Debian 12's boto3 and awscli send). Both decode into one request model,
// the JSON protocol's shape, so every action is written once.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/sqs/errors.hpp"

namespace spool::serve::sqs {

enum class protocol { json, query };

struct request {
  protocol wire = protocol::json;
  std::string action;     // "SendMessage"
  nlohmann::json params;  // an object, in the JSON protocol's shape
};

// Decodes a POST to the SQS endpoint. target is X-Amz-Target (empty when
// absent); the query protocol may also carry its form in the URL's query
// string (form). Throws sqs::error: InvalidAction for an unknown protocol
// or action name, SerializationException for malformed JSON,
// MalformedQueryString-like InvalidParameterValue for a broken form. Pure.
[[nodiscard]] request decode(std::string_view content_type, std::string_view target, std::string_view body,
                             std::string_view url_query = {});

struct reply {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// The answer to a successful action: result (an object in the JSON
// protocol's shape) as JSON, or as the query protocol's XML. Pure.
[[nodiscard]] reply encode_result(protocol wire, std::string_view action, const nlohmann::json& result,
                                  std::string_view request_id);
// The answer to a failed request, as each protocol spells errors. Pure.
[[nodiscard]] reply encode_error(protocol wire, const error& e, std::string_view request_id);

// The query protocol's form, decoded into the JSON protocol's shape
// (lists from Name.N, maps from Name.N.Key/Value, numbers as numbers).
// Throws sqs::error(InvalidParameterValue) for a broken member index or a
// name of more than 16 dot-separated parts (SQS's deepest has 7). Pure.
[[nodiscard]] nlohmann::json form_to_params(std::string_view action,
                                            const std::vector<std::pair<std::string, std::string>>& form);
// The query protocol's XML of one action's result. Pure.
[[nodiscard]] std::string result_to_xml(std::string_view action, const nlohmann::json& result,
                                        std::string_view request_id);
// application/x-www-form-urlencoded, decoded. Pure.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> parse_form(std::string_view body);

// Every action the API names (whether or not this server implements it).
[[nodiscard]] bool is_action(std::string_view name) noexcept;

}  // namespace spool::serve::sqs
