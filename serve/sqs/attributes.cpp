#include "serve/sqs/attributes.hpp"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>

#include "serve/sqs/errors.hpp"
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

void check_queue_attributes(const std::map<std::string, std::string>& attributes) {
  for (const auto& [name, value] : attributes) {
    bool known = false;
    for (const auto& r : int_rules) {
      if (name == r.name) {
        (void)attribute_int(name, value, r.lo, r.hi);
        known = true;
      }
    }
    if (in(fifo_attributes, name)) {
      if (name == "FifoQueue" && value == "false") continue;
      throw error("UnsupportedOperation",
                  fmt::format("{}: FIFO queues are not served by this spool serve yet", name));
    }
    if (name == "RedrivePolicy" && !value.empty()) {
      throw error("UnsupportedOperation",
                  "RedrivePolicy: dead-letter queues are not served by this spool serve yet");
    }
    if (in(text_attributes, name)) known = true;
    if (!known) throw error("InvalidAttributeName", fmt::format("Unknown Attribute {}.", name));
  }
}

std::string effective_attribute(const mq::catalog_entry& e, const std::string& name) {
  if (const auto it = e.attributes.find(name); it != e.attributes.end()) return it->second;
  const auto& d = attribute_defaults();
  const auto it = d.find(name);
  return it == d.end() ? std::string() : it->second;
}

std::int64_t effective_int(const mq::catalog_entry& e, const std::string& name) {
  const auto v = effective_attribute(e, name);
  return v.empty() ? 0 : std::stoll(v);
}

}  // namespace spool::serve::sqs
