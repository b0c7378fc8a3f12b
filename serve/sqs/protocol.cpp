// Decoding a request and encoding its answer in either protocol.
#include "serve/sqs/protocol.hpp"

#include <fmt/format.h>

#include <array>

#include "serve/sqs/json_parse.hpp"
#include "serve/sqs/json_text.hpp"

namespace spool::serve::sqs {

namespace {
constexpr std::array actions{"SendMessage",
                             "SendMessageBatch",
                             "ReceiveMessage",
                             "DeleteMessage",
                             "DeleteMessageBatch",
                             "ChangeMessageVisibility",
                             "ChangeMessageVisibilityBatch",
                             "CreateQueue",
                             "GetQueueUrl",
                             "ListQueues",
                             "GetQueueAttributes",
                             "SetQueueAttributes",
                             "DeleteQueue",
                             "PurgeQueue",
                             "ListDeadLetterSourceQueues",
                             "StartMessageMoveTask",
                             "ListMessageMoveTasks",
                             "CancelMessageMoveTask",
                             "TagQueue",
                             "UntagQueue",
                             "ListQueueTags",
                             "AddPermission",
                             "RemovePermission"};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string form_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size() || hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0) {
        throw error("InvalidParameterValue", "the form has a malformed percent escape");
      }
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
}  // namespace

bool is_action(std::string_view name) noexcept {
  for (const auto* a : actions) {
    if (name == a) return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> parse_form(std::string_view body) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!body.empty()) {
    const auto amp = body.find('&');
    const auto part = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (part.empty()) continue;
    const auto eq = part.find('=');
    out.emplace_back(form_decode(part.substr(0, eq)),
                     eq == std::string_view::npos ? std::string() : form_decode(part.substr(eq + 1)));
  }
  return out;
}

request decode(std::string_view content_type, std::string_view target, std::string_view body,
               std::string_view url_query) {
  request r;
  if (!target.empty()) {
    constexpr std::string_view prefix = "AmazonSQS.";
    if (!starts_with(target, prefix)) {
      throw error("InvalidAction", fmt::format("X-Amz-Target must be AmazonSQS.<Action>"));
    }
    r.wire = protocol::json;
    r.action = target.substr(prefix.size());
    if (!is_action(r.action)) throw error("InvalidAction", fmt::format("unknown action {}", r.action));
    if (body.empty()) {
      r.params = nlohmann::json::object();
      return r;
    }
    auto params = parse_json(body);
    if (!params || !params->is_object()) {
      throw error("SerializationException", "the request body is not a JSON object");
    }
    r.params = std::move(*params);
    return r;
  }
  r.wire = protocol::query;
  if (!content_type.empty() && !starts_with(content_type, "application/x-www-form-urlencoded")) {
    throw error("InvalidAction",
                "a request without X-Amz-Target must be a form (application/x-www-form-urlencoded)");
  }
  auto form = parse_form(url_query);
  for (auto& kv : parse_form(body)) form.push_back(std::move(kv));
  std::vector<std::pair<std::string, std::string>> members;
  for (auto& [k, v] : form) {
    if (k == "Action") {
      r.action = v;
    } else if (k != "Version" && !starts_with(k, "X-Amz-")) {
      members.emplace_back(std::move(k), std::move(v));
    }
  }
  if (r.action.empty()) throw error("InvalidAction", "the request names no Action");
  if (!is_action(r.action)) throw error("InvalidAction", fmt::format("unknown action {}", r.action));
  r.params = form_to_params(r.action, members);
  return r;
}

reply encode_result(protocol wire, std::string_view action, const nlohmann::json& result,
                    std::string_view request_id) {
  reply out;
  out.headers.emplace_back("x-amzn-RequestId", std::string(request_id));
  if (wire == protocol::json) {
    out.content_type = "application/x-amz-json-1.0";
    out.body = to_json_text(result);
  } else {
    out.content_type = "text/xml";
    out.body = result_to_xml(action, result, request_id);
  }
  return out;
}

reply encode_error(protocol wire, const error& e, std::string_view request_id) {
  const auto k = e.kind();
  reply out;
  out.status = k.status;
  out.headers.emplace_back("x-amzn-RequestId", std::string(request_id));
  if (wire == protocol::json) {
    out.content_type = "application/x-amz-json-1.0";
    out.headers.emplace_back("x-amzn-query-error",
                             fmt::format("{};{}", k.legacy_code, k.sender ? "Sender" : "Receiver"));
    out.body =
        nlohmann::json{{"__type", fmt::format("com.amazonaws.sqs#{}", e.code())}, {"message", e.what()}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    out.content_type = "text/xml";
    const auto body = nlohmann::json{{"Type", k.sender ? "Sender" : "Receiver"},
                                     {"Code", std::string(k.legacy_code)},
                                     {"Message", e.what()}};
    out.body = result_to_xml("", body, request_id);  // the ErrorResponse form
  }
  return out;
}

}  // namespace spool::serve::sqs
