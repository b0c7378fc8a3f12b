// The query protocol's XML answers: one element per member of the JSON
// protocol's result, lists flattened (one element per entry) and maps as
// Name/Value pairs, as the SQS API reference shows them.
#include <fmt/format.h>

#include "serve/sqs/protocol.hpp"

namespace spool::serve::sqs {

namespace {

constexpr std::string_view xmlns = "http://queue.amazonaws.com/doc/2012-11-05/";

// Escapes text for XML; a carriage return is a character reference, or
// the client's parser would turn \r\n into \n and change a body's MD5.
void escape(std::string& out, std::string_view s) {
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\r':
        out += "&#xD;";
        break;
      default:
        out += c;
    }
  }
}

void element(std::string& out, std::string_view name, const nlohmann::json& v, std::string_view action);

void scalar(std::string& out, const nlohmann::json& v) {
  if (v.is_string()) {
    escape(out, v.get_ref<const std::string&>());
  } else if (v.is_boolean()) {
    out += v.get<bool>() ? "true" : "false";
  } else if (!v.is_null()) {
    out += v.dump();
  }
}

void open(std::string& out, std::string_view name) { out += fmt::format("<{}>", name); }
void close(std::string& out, std::string_view name) { out += fmt::format("</{}>", name); }

void members(std::string& out, const nlohmann::json& object, std::string_view action) {
  for (const auto& [k, v] : object.items()) element(out, k, v, action);
}

// The element name of each entry of a list member.
std::string entry_name(std::string_view list, std::string_view action) {
  if (list == "Messages") return "Message";
  if (list == "QueueUrls" || list == "queueUrls") return "QueueUrl";
  if (list == "Failed") return "BatchResultErrorEntry";
  if (list == "Successful") return fmt::format("{}ResultEntry", action);
  if (list == "Results") return fmt::format("{}ResultEntry", action);
  return std::string(list);
}

void element(std::string& out, std::string_view name, const nlohmann::json& v, std::string_view action) {
  if (name == "Attributes" && v.is_object()) {
    for (const auto& [k, value] : v.items()) {
      out += "<Attribute><Name>";
      escape(out, k);
      out += "</Name><Value>";
      scalar(out, value);
      out += "</Value></Attribute>";
    }
  } else if ((name == "MessageAttributes" || name == "MessageSystemAttributes") && v.is_object()) {
    const auto one = name == "MessageAttributes" ? "MessageAttribute" : "MessageSystemAttribute";
    for (const auto& [k, value] : v.items()) {
      out += fmt::format("<{}><Name>", one);
      escape(out, k);
      out += "</Name><Value>";
      members(out, value, action);
      out += fmt::format("</Value></{}>", one);
    }
  } else if (name == "Tags" && v.is_object()) {
    for (const auto& [k, value] : v.items()) {
      out += "<Tag><Key>";
      escape(out, k);
      out += "</Key><Value>";
      scalar(out, value);
      out += "</Value></Tag>";
    }
  } else if (v.is_array()) {
    const auto entry = entry_name(name, action);
    for (const auto& e : v) element(out, entry, e, action);
  } else if (v.is_object()) {
    open(out, name);
    members(out, v, action);
    close(out, name);
  } else {
    open(out, name);
    scalar(out, v);
    close(out, name);
  }
}

}  // namespace

std::string result_to_xml(std::string_view action, const nlohmann::json& result,
                          std::string_view request_id) {
  std::string out = R"(<?xml version="1.0" encoding="UTF-8"?>)";
  if (action.empty()) {  // an error: result holds Type, Code and Message
    out += fmt::format(R"(<ErrorResponse xmlns="{}"><Error>)", xmlns);
    members(out, result, action);
    out += "<Detail/></Error><RequestId>";
    escape(out, request_id);
    out += "</RequestId></ErrorResponse>";
    return out;
  }
  out += fmt::format(R"(<{}Response xmlns="{}">)", action, xmlns);
  if (!result.empty()) {
    out += fmt::format("<{}Result>", action);
    members(out, result, action);
    out += fmt::format("</{}Result>", action);
  }
  out += "<ResponseMetadata><RequestId>";
  escape(out, request_id);
  out += fmt::format("</RequestId></ResponseMetadata></{}Response>", action);
  return out;
}

}  // namespace spool::serve::sqs
