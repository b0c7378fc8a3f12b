// Fuzz target: the SQS request decoders of `spool serve`
// (serve/sqs/protocol.hpp): sqs::decode in both wire protocols — AWS JSON 1.0
// (X-Amz-Target: AmazonSQS.<Action>) and the query protocol (a form with
// Action=…, in the body and the URL's query), with parse_form and
// form_to_params under it. The input is the request: its first three lines are
// X-Amz-Target, Content-Type and the URL's query, the rest is the body as is.
// Bad input is sqs::error with a client-fault code decode documents
// (InvalidAction, SerializationException, InvalidParameterValue,
// MissingParameter), never another exception, and it encodes as an error
// answer in both protocols. A decoded request names an SQS action and holds an
// object; it re-validates: its parameters written back as the JSON protocol
// and as a query form decode to the same request, and the URL's query and the
// body read as one form.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.hpp"
#include "serve/sqs/protocol.hpp"

using spool::fuzz::check;
namespace sqs = spool::serve::sqs;
using json = nlohmann::json;

namespace {

constexpr std::string_view json_type = "application/x-amz-json-1.0";
constexpr std::string_view form_type = "application/x-www-form-urlencoded";

// The client-fault codes decode raises (protocol.hpp, query_form.cpp).
void check_decode_error(const sqs::error& e) {
  const std::string& c = e.code();
  check(c == "InvalidAction" || c == "SerializationException" || c == "InvalidParameterValue" ||
            c == "MissingParameter",
        "decode raised an sqs::error with an undocumented code");
  const auto k = e.kind();
  check(k.sender && k.status == 400, "a decode error is not a 400 Sender error");
  // (No check that what() is non-empty: a message may start with the request's own bytes, a NUL.)
  // The server answers it in either protocol; neither encoding may fail.
  const auto as_json = sqs::encode_error(sqs::protocol::json, e, "req-1");
  check(as_json.status == 400, "the JSON error answer is not 400");
  const auto body = json::parse(as_json.body, nullptr, false);
  check(body.is_object() && body.value("__type", "") == "com.amazonaws.sqs#" + c && body.contains("message"),
        "the JSON error answer is not {__type, message}");
  const auto as_xml = sqs::encode_error(sqs::protocol::query, e, "req-1");
  check(as_xml.status == 400 &&
            as_xml.body.find("<Code>" + std::string(k.legacy_code) + "</Code>") != std::string::npos,
        "the query error answer lacks its code");
}

// Runs decode into out; only sqs::error may leave it (checked, then false).
bool try_decode(std::string_view type, std::string_view target, std::string_view body, std::string_view query,
                sqs::request& out) {
  try {
    out = sqs::decode(type, target, body, query);
    return true;
  } catch (const sqs::error& e) {
    check_decode_error(e);
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    spool::fuzz::fail("decode raised an exception other than sqs::error");
  } catch (...) {
    spool::fuzz::fail("decode raised a non-exception");
  }
}

// application/x-www-form-urlencoded, every byte but unreserved ones escaped.
std::string form_encode(std::string_view s) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 0xF];
    }
  }
  return out;
}

void add(std::string& form, const std::string& name, const std::string& value) {
  form += '&';
  form += form_encode(name);
  form += '=';
  form += form_encode(value);
}

std::string scalar_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The query member names of the JSON protocol's lists and maps (the inverse
// of query_form.cpp's rules; any of the three batch entry names reads as Entries).
std::string list_member(const std::string& json_name) {
  if (json_name == "AttributeNames") return "AttributeName";
  if (json_name == "MessageAttributeNames") return "MessageAttributeName";
  if (json_name == "MessageSystemAttributeNames") return "MessageSystemAttributeName";
  if (json_name == "TagKeys") return "TagKey";
  if (json_name == "AWSAccountIds") return "AWSAccountId";
  if (json_name == "Actions") return "ActionName";
  if (json_name == "Entries") return "SendMessageBatchRequestEntry";
  spool::fuzz::fail("a decoded list under a name no query list has");
}

void members_to_form(std::string& form, const json& object, const std::string& prefix);

void member_to_form(std::string& form, const std::string& key, const json& v, const std::string& prefix) {
  if (v.is_array()) {
    const auto name = prefix + list_member(key);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const auto item = name + "." + std::to_string(i + 1);
      if (v[i].is_object()) {
        members_to_form(form, v[i], item + ".");
      } else {
        add(form, item, scalar_text(v[i]));
      }
    }
  } else if (v.is_object()) {
    const bool tags = key == "Tags" || key == "tags";
    const bool objects = key == "MessageAttributes" || key == "MessageSystemAttributes";
    check(tags || objects || key == "Attributes", "a decoded map under a name no query map has");
    const auto name = prefix + (tags      ? std::string("Tag")
                                : objects ? key.substr(0, key.size() - 1)
                                          : std::string("Attribute"));
    std::size_t n = 0;
    for (const auto& [k, value] : v.items()) {
      const auto item = name + "." + std::to_string(++n);
      add(form, item + (tags ? ".Key" : ".Name"), k);
      if (objects) {
        check(value.is_object(), "a message attribute's value is not an object");
        members_to_form(form, value, item + ".Value.");
      } else {
        add(form, item + ".Value", scalar_text(value));
      }
    }
  } else {
    check(v.is_string() || v.is_number_integer(), "a query member decoded to neither text nor an integer");
    add(form, prefix + key, scalar_text(v));
  }
}

void members_to_form(std::string& form, const json& object, const std::string& prefix) {
  for (const auto& [k, v] : object.items()) member_to_form(form, k, v, prefix);
}

void check_request(const sqs::request& r, std::string_view target) {
  check(sqs::is_action(r.action), "a decoded request names no SQS action");
  check(r.params.is_object(), "a decoded request's parameters are not an object");
  check((r.wire == sqs::protocol::json) == !target.empty(), "the protocol is not chosen by X-Amz-Target");
  if (r.wire == sqs::protocol::json) {
    check("AmazonSQS." + r.action == target, "the JSON protocol's action is not the target's");
  }
}

void recheck_json(const sqs::request& r, std::string_view target) {
  const std::string body = r.params.dump();
  sqs::request again;
  check(try_decode(json_type, target, body, {}, again), "a decoded JSON request does not decode again");
  check(again.action == r.action && again.params.dump() == body, "a JSON request does not decode to itself");
}

void recheck_query(const sqs::request& r, std::string_view type, std::string_view body,
                   std::string_view query) {
  // The URL's query and the body are one form.
  sqs::request joined;
  const std::string both = std::string(query) + "&" + std::string(body);
  check(try_decode(type, "", both, {}, joined) && joined.action == r.action && joined.params == r.params,
        "the URL's query and the body do not read as one form");

  // The decoded members written back as a query form decode to themselves.
  std::string form = "Action=" + form_encode(r.action);
  members_to_form(form, r.params, "");
  sqs::request again;
  check(try_decode(form_type, "", form, {}, again), "a decoded query request written back does not decode");
  check(again.wire == sqs::protocol::query && again.action == r.action && again.params == r.params,
        "a decoded query request written back decodes to another request");

  // And as the JSON protocol, when its texts are UTF-8 (JSON carries nothing else).
  std::string as_json;
  try {
    as_json = r.params.dump();
  } catch (const json::type_error&) {
    return;  // invalid UTF-8 in a value: only the query protocol can carry it
  }
  const std::string target = "AmazonSQS." + r.action;
  sqs::request via_json;
  check(try_decode(json_type, target, as_json, {}, via_json), "a query request as JSON does not decode");
  check(via_json.params == r.params, "a query request as JSON decodes to other parameters");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::string_view lines[3];
  for (auto& line : lines) {
    const auto nl = rest.find('\n');
    line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  const auto [target, type, query] = lines;
  const std::string_view body = rest;

  sqs::request r;
  if (!try_decode(type, target, body, query, r)) return 0;
  check_request(r, target);
  if (r.wire == sqs::protocol::json) {
    recheck_json(r, target);
  } else {
    recheck_query(r, type, body, query);
  }
  return 0;
}
