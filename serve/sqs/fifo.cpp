#include "serve/sqs/fifo.hpp"

#include <fmt/format.h>

#include "serve/sigv4.hpp"
#include "serve/sqs/attributes.hpp"
#include "serve/sqs/params.hpp"

namespace spool::serve::sqs {

namespace {

constexpr const char* dedup_member = "sqsDeduplicationId";
constexpr const char* sequence_member = "sqsSequenceNumber";

// SQS's rule for group and deduplication ids: 1 to 128 of alphanumerics and punctuation.
void check_id(const std::string& value, const char* name) {
  const bool ok = !value.empty() && value.size() <= 128 &&
                  std::all_of(value.begin(), value.end(), [](unsigned char ch) { return ch > 0x20 && ch < 0x7f; });
  if (!ok) {
    throw error("InvalidParameterValue",
                fmt::format("Value for parameter {} is invalid: 1 to 128 alphanumeric or punctuation characters.",
                            name));
  }
}

std::optional<std::string> string_member(const mq::message& m, const char* key) {
  for (const auto& x : m.extra) {
    if (x.key != key) continue;
    const auto v = nlohmann::json::parse(x.json, nullptr, false);
    if (v.is_string()) return v.get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

bool is_fifo_name(const std::string& name) noexcept {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".fifo") == 0;
}

fifo_send fifo_send_of(const nlohmann::json& p, const mq::catalog_entry& e, const std::string& body) {
  fifo_send s;
  const auto group = optional_string(p, "MessageGroupId");
  if (!group) throw error("MissingParameter", "The request must contain the parameter MessageGroupId.");
  check_id(*group, "MessageGroupId");
  s.group = *group;
  if (p.contains("DelaySeconds") && optional_int(p, "DelaySeconds", 0, 900).value_or(0) != 0) {
    throw error("InvalidParameterValue",
                "Value for parameter DelaySeconds is invalid. Reason: The request include parameter that is "
                "not valid for this queue type.");
  }
  if (const auto dedup = optional_string(p, "MessageDeduplicationId")) {
    check_id(*dedup, "MessageDeduplicationId");
    s.dedup_id = *dedup;
  } else if (effective_attribute(e, "ContentBasedDeduplication") == "true") {
    s.dedup_id = sigv4::sha256_hex(body);
  } else {
    throw error("InvalidParameterValue",
                "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId "
                "provided explicitly");
  }
  // A newline is in no group id: the key cannot collide across groups.
  s.dedup_key = effective_attribute(e, "DeduplicationScope") == "messageGroup" ? s.group + "\n" + s.dedup_id
                                                                               : s.dedup_id;
  return s;
}

void stamp_fifo(mq::message& m, const fifo_send& s, std::int64_t sequence_number) {
  m.message_group_id = s.group;
  m.extra.push_back({dedup_member, nlohmann::json(s.dedup_id).dump()});
  // 20 digits, as SQS spells them, so that they also sort as text.
  m.extra.push_back({sequence_member, nlohmann::json(fmt::format("{:020}", sequence_number)).dump()});
}

fifo_stamp fifo_stamp_of(const mq::message& m) {
  return {string_member(m, dedup_member), string_member(m, sequence_member)};
}

}  // namespace spool::serve::sqs
