#include "serve/sqs/attributes.hpp"

#include <fmt/format.h>

#include <array>
#include <initializer_list>
#include <vector>
#include <nlohmann/json.hpp>

#include "serve/sqs/errors.hpp"
#include "serve/sqs/fifo.hpp"
#include "serve/sqs/params.hpp"

namespace spool::serve::sqs {

namespace {
struct int_rule {
  const char* name;
  std::int64_t lo, hi;
};
constexpr std::array int_rules{
    int_rule{"DelaySeconds", 0, 900},
    int_rule{"MaximumMessageSize", 1024, 262144},
    int_rule{"MessageRetentionPeriod", 60, 1209600},
    int_rule{"ReceiveMessageWaitTimeSeconds", 0, 20},
    int_rule{"VisibilityTimeout", 0, 43200},
    int_rule{"KmsDataKeyReusePeriodSeconds", 60, 86400},
};
constexpr std::array text_attributes{"RedrivePolicy", "RedriveAllowPolicy", "Policy", "KmsMasterKeyId",
                                     "SqsManagedSseEnabled"};
constexpr std::array fifo_attributes{"FifoQueue", "ContentBasedDeduplication", "DeduplicationScope",
                                     "FifoThroughputLimit"};
constexpr std::array computed{"All",
                              "ApproximateNumberOfMessages",
                              "ApproximateNumberOfMessagesNotVisible",
                              "ApproximateNumberOfMessagesDelayed",
                              "CreatedTimestamp",
                              "LastModifiedTimestamp",
                              "QueueArn"};

template <class Array>
bool in(const Array& a, const std::string& name) {
  for (const auto* x : a) {
    if (name == x) return true;
  }
  return false;
}
}  // namespace

const std::map<std::string, std::string>& attribute_defaults() {
  static const std::map<std::string, std::string> defaults = {
      {"DelaySeconds", "0"},
      {"MaximumMessageSize", "262144"},
      {"MessageRetentionPeriod", "345600"},
      {"ReceiveMessageWaitTimeSeconds", "0"},
      {"VisibilityTimeout", "30"},
      {"SqsManagedSseEnabled", "false"},
  };
  return defaults;
}

bool is_computed_attribute(const std::string& name) { return in(computed, name); }

bool is_known_attribute(const std::string& name) {
  for (const auto& r : int_rules) {
    if (name == r.name) return true;
  }
  return in(computed, name) || in(text_attributes, name) || in(fifo_attributes, name);
}

void check_queue_attributes(const std::map<std::string, std::string>& attributes, bool fifo) {
  const auto one_of = [](const std::string& name, const std::string& value, std::initializer_list<const char*> ok) {
    for (const auto* v : ok) {
      if (value == v) return;
    }
    throw error("InvalidAttributeValue", fmt::format("Invalid value for the parameter {}.", name));
  };
  for (const auto& [name, value] : attributes) {
    bool known = false;
    for (const auto& r : int_rules) {
      if (name == r.name) {
        (void)attribute_int(name, value, r.lo, r.hi);
        known = true;
      }
    }
    if (name == "FifoQueue") {
      if (value != (fifo ? "true" : "false")) {
        throw error("InvalidParameterValue",
                    "The queue should either have FifoQueue attribute set to true or its name must not end "
                    "with .fifo");
      }
      continue;
    }
    if (in(fifo_attributes, name)) {
      if (!fifo) throw error("InvalidAttributeName", fmt::format("Unknown Attribute {}.", name));
      if (name == "ContentBasedDeduplication") one_of(name, value, {"true", "false"});
      if (name == "DeduplicationScope") one_of(name, value, {"messageGroup", "queue"});
      if (name == "FifoThroughputLimit") one_of(name, value, {"perQueue", "perMessageGroupId"});
      continue;
    }
    if (name == "RedrivePolicy" && !value.empty()) (void)parse_redrive_policy(value);
    if (in(text_attributes, name)) known = true;
    if (!known) throw error("InvalidAttributeName", fmt::format("Unknown Attribute {}.", name));
  }
}

redrive_policy parse_redrive_policy(const std::string& text) {
  const auto bad = [](const std::string& why) {
    return error("InvalidParameterValue",
                 fmt::format("Value for parameter RedrivePolicy is invalid. Reason: {}", why));
  };
  const auto v = nlohmann::json::parse(text, nullptr, false);
  if (!v.is_object()) throw bad("Redrive policy is not a valid JSON map.");
  if (!v.contains("deadLetterTargetArn") || !v["deadLetterTargetArn"].is_string())
    throw bad("Redrive policy does not contain mandatory attribute: deadLetterTargetArn.");
  if (!v.contains("maxReceiveCount"))
    throw bad("Redrive policy does not contain mandatory attribute: maxReceiveCount.");
  const auto& count = v["maxReceiveCount"];
  std::int64_t n = 0;
  if (count.is_number_integer()) {
    n = count.get<std::int64_t>();
  } else if (count.is_string()) {
    n = attribute_int("maxReceiveCount", count.get<std::string>(), 1, 1000);
  } else {
    throw bad("Invalid value for maxReceiveCount.");
  }
  if (n < 1 || n > 1000) throw bad("Invalid value for maxReceiveCount: 1 to 1000.");
  const auto arn = v["deadLetterTargetArn"].get<std::string>();
  const auto target = parse_queue_arn(v["deadLetterTargetArn"].get<std::string>());
  if (!target) throw bad("Invalid value for deadLetterTargetArn.");
  return {target->account, target->name, n};
}

std::optional<redrive_policy> redrive_policy_of(const mq::catalog_entry& e) {
  const auto it = e.attributes.find("RedrivePolicy");
  if (it == e.attributes.end() || it->second.empty()) return std::nullopt;
  return parse_redrive_policy(it->second);
}

std::string effective_attribute(const mq::catalog_entry& e, const std::string& name) {
  if (const auto it = e.attributes.find(name); it != e.attributes.end()) return it->second;
  if (is_fifo_name(e.name)) {
    if (name == "FifoQueue") return "true";
    if (name == "ContentBasedDeduplication") return "false";
    if (name == "DeduplicationScope") return "queue";
    if (name == "FifoThroughputLimit") return "perQueue";
  }
  const auto& d = attribute_defaults();
  const auto it = d.find(name);
  return it == d.end() ? std::string() : it->second;
}

std::int64_t effective_int(const mq::catalog_entry& e, const std::string& name) {
  const auto v = effective_attribute(e, name);
  return v.empty() ? 0 : std::stoll(v);
}

}  // namespace spool::serve::sqs
