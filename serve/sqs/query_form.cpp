// The query protocol's flattened members (Attribute.1.Name=…, Entry.2.Id=…)
// decoded into the JSON protocol's shape, so each action reads one shape.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "serve/sqs/protocol.hpp"

namespace spool::serve::sqs {

namespace {

using path_value = std::pair<std::vector<std::string>, std::string>;

enum class shape { list_of_strings, list_of_objects, name_value_map, name_object_map, key_value_map };

struct member_rule {
  std::string_view query_name;
  std::string_view json_name;
  shape kind;
};

constexpr member_rule rules[] = {
    {"AttributeName", "AttributeNames", shape::list_of_strings},
    {"MessageAttributeName", "MessageAttributeNames", shape::list_of_strings},
    {"MessageSystemAttributeName", "MessageSystemAttributeNames", shape::list_of_strings},
    {"TagKey", "TagKeys", shape::list_of_strings},
    {"AWSAccountId", "AWSAccountIds", shape::list_of_strings},
    {"ActionName", "Actions", shape::list_of_strings},
    {"SendMessageBatchRequestEntry", "Entries", shape::list_of_objects},
    {"DeleteMessageBatchRequestEntry", "Entries", shape::list_of_objects},
    {"ChangeMessageVisibilityBatchRequestEntry", "Entries", shape::list_of_objects},
    {"Attribute", "Attributes", shape::name_value_map},
    {"MessageAttribute", "MessageAttributes", shape::name_object_map},
    {"MessageSystemAttribute", "MessageSystemAttributes", shape::name_object_map},
    {"Tag", "Tags", shape::key_value_map},
};

constexpr std::string_view integer_members[] = {"DelaySeconds",      "MaxNumberOfMessages",
                                                "VisibilityTimeout", "WaitTimeSeconds",
                                                "MaxResults",        "MaxNumberOfMessagesPerSecond"};

// The deepest name SQS has is 7 parts (SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.
// StringListValue.1). Each level of nesting copies the rest of every name's path, so a deeper name
// is refused before it costs memory quadratic in its depth (a 124 KB form took 2 GB).
constexpr std::size_t max_name_parts = 16;

std::vector<std::string> split_path(const std::string& key) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const auto dot = key.find('.', from);
    out.push_back(key.substr(from, dot - from));
    if (dot == std::string::npos) return out;
    from = dot + 1;
  }
}

long member_index(const std::string& s, const std::string& whole) {
  const bool digits = !s.empty() && s.size() <= 6 &&
                      std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
  const long n = digits ? std::stol(s) : 0;
  if (n < 1) throw error("InvalidParameterValue", fmt::format("{}: a member index must be 1, 2, …", whole));
  return n;
}

nlohmann::json decode_members(const std::vector<path_value>& items, const std::string& prefix);

// Members of one group (the same first segment), by index, each with the rest of its path.
std::map<long, std::vector<path_value>> by_index(const std::vector<path_value>& items,
                                                 const std::string& name) {
  std::map<long, std::vector<path_value>> out;
  for (const auto& [path, value] : items) {
    if (path.size() < 2) throw error("InvalidParameterValue", fmt::format("{} needs a member index", name));
    out[member_index(path[1], name)].emplace_back(std::vector<std::string>(path.begin() + 2, path.end()),
                                                  value);
  }
  return out;
}

const std::string* field(const std::vector<path_value>& rest, std::string_view name) {
  for (const auto& [path, value] : rest) {
    if (path.size() == 1 && path[0] == name) return &value;
  }
  return nullptr;
}

nlohmann::json decode_group(const member_rule& rule, const std::vector<path_value>& items,
                            const std::string& name) {
  const auto members = by_index(items, name);
  switch (rule.kind) {
    case shape::list_of_strings: {
      auto out = nlohmann::json::array();
      for (const auto& [n, rest] : members) {
        if (rest.size() != 1 || !rest[0].first.empty()) {
          throw error("InvalidParameterValue", fmt::format("{}.{} must be a plain value", name, n));
        }
        out.push_back(rest[0].second);
      }
      return out;
    }
    case shape::list_of_objects: {
      auto out = nlohmann::json::array();
      for (const auto& [n, rest] : members)
        out.push_back(decode_members(rest, fmt::format("{}.{}.", name, n)));
      return out;
    }
    default:
      break;
  }
  auto out = nlohmann::json::object();
  const bool tag = rule.kind == shape::key_value_map;
  for (const auto& [n, rest] : members) {
    const auto* key = field(rest, tag ? "Key" : "Name");
    if (key == nullptr)
      throw error("MissingParameter", fmt::format("{}.{}.{} is missing", name, n, tag ? "Key" : "Name"));
    if (rule.kind == shape::name_object_map) {
      std::vector<path_value> value;
      for (const auto& [path, v] : rest) {
        if (path.size() >= 2 && path[0] == "Value")
          value.emplace_back(std::vector(path.begin() + 1, path.end()), v);
      }
      out[*key] = decode_members(value, fmt::format("{}.{}.Value.", name, n));
    } else {
      const auto* value = field(rest, "Value");
      out[*key] = value != nullptr ? *value : std::string();
    }
  }
  return out;
}

nlohmann::json decode_members(const std::vector<path_value>& items, const std::string& prefix) {
  std::map<std::string, std::vector<path_value>> groups;
  for (const auto& item : items) {
    if (item.first.empty()) {
      throw error("InvalidParameterValue", fmt::format("{} must have members, not a value", prefix));
    }
    groups[item.first[0]].push_back(item);
  }
  auto out = nlohmann::json::object();
  for (const auto& [head, group] : groups) {
    const auto name = prefix + head;
    const std::string& key = head;  // clang before 16 captures no structured binding
    const auto* rule =
        std::find_if(std::begin(rules), std::end(rules), [&](const auto& r) { return r.query_name == key; });
    if (rule != std::end(rules)) {
      out[std::string(rule->json_name)] = decode_group(*rule, group, name);
      continue;
    }
    if (group.size() != 1 || group[0].first.size() != 1) {
      throw error("InvalidParameterValue", fmt::format("{} is not a structured parameter", name));
    }
    const auto& value = group[0].second;
    if (std::find(std::begin(integer_members), std::end(integer_members), head) !=
        std::end(integer_members)) {
      const bool ok = !value.empty() && value.size() <= 18 &&
                      std::all_of(value.begin() + (value[0] == '-' ? 1 : 0), value.end(),
                                  [](unsigned char c) { return std::isdigit(c); }) &&
                      value != "-";
      if (!ok) throw error("InvalidParameterValue", fmt::format("{} must be an integer", name));
      out[head] = std::stoll(value);
    } else {
      out[head] = value;
    }
  }
  return out;
}

}  // namespace

nlohmann::json form_to_params(std::string_view action,
                              const std::vector<std::pair<std::string, std::string>>& form) {
  std::vector<path_value> items;
  items.reserve(form.size());
  for (const auto& [k, v] : form) {
    if (k.empty()) throw error("InvalidParameterValue", "the form has an empty parameter name");
    if (static_cast<std::size_t>(std::count(k.begin(), k.end(), '.')) >= max_name_parts) {
      throw error("InvalidParameterValue",
                  fmt::format("a parameter name has more than {} dot-separated parts", max_name_parts));
    }
    items.emplace_back(split_path(k), v);
  }
  auto params = decode_members(items, "");
  // The one member whose JSON name is not its query name's plural: CreateQueue's tags.
  if (action == "CreateQueue" && params.contains("Tags")) {
    params["tags"] = std::move(params["Tags"]);
    params.erase("Tags");
  }
  return params;
}

}  // namespace spool::serve::sqs
