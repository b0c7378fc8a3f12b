// ReceiveMessage: a claim through mq::queue (a long poll woken by sends),
// then per message the dead-letter rule, the call's visibility, and the
// attributes asked for.
#include <atomic>
#include <chrono>

#include "common/text/base64.hpp"
#include "serve/sqs/actions.hpp"
#include "serve/sqs/attributes.hpp"
#include "serve/sqs/fifo.hpp"
#include "serve/sqs/md5.hpp"
#include "serve/sqs/params.hpp"
#include "spool/error.hpp"

namespace spool::serve::sqs {

namespace {

using json = nlohmann::json;

bool wanted(const std::vector<std::string>& names, const std::string& name) {
  for (const auto& n : names) {
    if (n == "All" || n == ".*" || n == name) return true;
    if (n.size() > 2 && n.substr(n.size() - 2) == ".*" && name.rfind(n.substr(0, n.size() - 1), 0) == 0)
      return true;
  }
  return false;
}

std::vector<std::string> names_of(const json& p, const char* member) {
  std::vector<std::string> out;
  if (p.contains(member) && p[member].is_array()) {
    for (const auto& v : p[member]) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

constexpr const char* first_receive_member = "sqsFirstReceiveTimestamp";

std::vector<std::string> system_names(const json& p) {
  auto system = names_of(p, "AttributeNames");
  for (auto& n : names_of(p, "MessageSystemAttributeNames")) system.push_back(std::move(n));
  return system;
}

// The names a ReceiveMessage asks for, read once per call.
struct asked {
  std::vector<std::string> system;      // AttributeNames and MessageSystemAttributeNames
  std::vector<std::string> attributes;  // MessageAttributeNames
};

asked asked_of(const json& p) { return {system_names(p), names_of(p, "MessageAttributeNames")}; }

// One message of the answer. d is consumed: its body moves into the answer.
json received(mq::delivered_message&& d, const asked& a, const std::string& account) {
  std::string body =
      d.body.body ? std::move(*d.body.body) : mq::encode(d.body);  // a legacy row: its wire JSON
  json out = json::object();
  out["MessageId"] = std::move(d.broker_message_id);
  out["ReceiptHandle"] = std::move(d.receipt);
  out["MD5OfBody"] = md5_hex(body);
  out["Body"] = std::move(body);
  const auto& system = a.system;
  json attrs = json::object();
  if (wanted(system, "ApproximateReceiveCount"))
    attrs["ApproximateReceiveCount"] = std::to_string(d.receive_count.value_or(1));
  if (wanted(system, "SentTimestamp")) attrs["SentTimestamp"] = std::to_string(d.created_at * 1000);
  if (wanted(system, "SenderId")) attrs["SenderId"] = account;
  for (const auto& x : d.body.extra) {
    if (x.key == first_receive_member && wanted(system, "ApproximateFirstReceiveTimestamp")) {
      attrs["ApproximateFirstReceiveTimestamp"] = json::parse(x.json, nullptr, false).get<std::string>();
    }
  }
  if (d.group && wanted(system, "MessageGroupId")) attrs["MessageGroupId"] = *d.group;
  const auto stamp = fifo_stamp_of(d.body);
  if (stamp.dedup_id && wanted(system, "MessageDeduplicationId"))
    attrs["MessageDeduplicationId"] = *stamp.dedup_id;
  if (stamp.sequence_number && wanted(system, "SequenceNumber"))
    attrs["SequenceNumber"] = *stamp.sequence_number;
  if (!attrs.empty()) out["Attributes"] = std::move(attrs);
  std::vector<mq::message_attribute> chosen;
  for (auto& attr : d.body.attributes) {
    if (wanted(a.attributes, attr.name)) chosen.push_back(std::move(attr));
  }
  if (!chosen.empty()) {
    json m = json::object();
    for (const auto& attr : chosen) {
      const bool binary = attribute_base_type(attr.data_type) == "Binary";
      m[attr.name] = binary ? json{{"DataType", attr.data_type},
                                   {"BinaryValue", spool::detail::base64_encode(attr.value)}}
                            : json{{"DataType", attr.data_type}, {"StringValue", attr.value}};
    }
    out["MessageAttributes"] = std::move(m);
    out["MD5OfMessageAttributes"] = md5_of_attributes(chosen);
  }
  return out;
}

}  // namespace

// The first receive that asks for ApproximateFirstReceiveTimestamp records it
// in the message (member sqsFirstReceiveTimestamp, one more write), so that
// later receives report the same time; receives that never ask pay nothing.
void actions::stamp_first_receive(const call& c, const mq::catalog_entry& e, mq::delivered_message& d) {
  for (const auto& x : d.body.extra) {
    if (x.key == first_receive_member) return;
  }
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  d.body.extra.push_back({first_receive_member, json(std::to_string(now)).dump()});
  (void)c.s.catalog_.rewrite(e.name, d.broker_message_id, d.receipt, d.body);
}

json actions::receive_message(const call& c) {
  const auto e = entry_of(c);
  const auto max = static_cast<std::size_t>(optional_int(c.p, "MaxNumberOfMessages", 1, 10).value_or(1));
  const auto wait =
      optional_int(c.p, "WaitTimeSeconds", 0, 20).value_or(effective_int(e, "ReceiveMessageWaitTimeSeconds"));
  const auto window = optional_int(c.p, "VisibilityTimeout", 0, 43200);
  const auto q = queue_of(c, e);
  c.s.sweep(e);
  std::vector<mq::delivered_message> got;
  const auto stop = c.s.stop_.get_token();
  if (stop.stop_requested()) return {{"Messages", json::array()}};
  struct waiting_scope {
    std::atomic<std::int64_t>& n;
    explicit waiting_scope(std::atomic<std::int64_t>& count) : n(count) { ++n; }
    ~waiting_scope() { --n; }
    waiting_scope(const waiting_scope&) = delete;
    waiting_scope& operator=(const waiting_scope&) = delete;
  };
  try {
    if (wait > 0) {
      const waiting_scope counted(c.s.waiting_);
      got = q->poll_wait(max, std::chrono::seconds(wait), {std::nullopt, stop});
    } else {
      got = q->poll(max);
    }
  } catch (const spool::error&) {
    // A stopping server ends long polls empty; a claim cut short reappears after its window.
    if (stop.stop_requested()) return {{"Messages", json::array()}};
    throw;
  }
  json messages = json::array();
  const auto names = asked_of(c.p);
  for (auto& d : got) {
    if (dead_lettered(c, e, d)) continue;
    if (wanted(names.system, "ApproximateFirstReceiveTimestamp")) {
      stamp_first_receive(c, e, d);  // while the receipt still holds it
    }
    if (window && *window != effective_int(e, "VisibilityTimeout")) {
      if (*window == 0) {
        (void)q->defer(d.receipt);  // handed out and visible again at once
      } else {
        q->extend_visibility(d.receipt, std::chrono::seconds(*window));
      }
    }
    messages.push_back(received(std::move(d), names, c.account));
  }
  json out = json::object();
  out["Messages"] = std::move(messages);
  return out;
}

}  // namespace spool::serve::sqs
