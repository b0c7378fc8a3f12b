// Dead-letter queues: receives past a queue's RedrivePolicy move the message
// to its dead-letter queue (mq::catalog::move, one transaction), and move
// tasks redrive a dead-letter queue back to each message's source queue or
// to a named destination.
#include <fmt/format.h>

#include "serve/sqs/actions.hpp"
#include "serve/sqs/attributes.hpp"
#include "serve/sqs/move_tasks.hpp"
#include "serve/sqs/params.hpp"
#include "spool/error.hpp"

namespace spool::serve::sqs {

namespace {

using json = nlohmann::json;


// Where a dead-lettered message came from (catalog::move records it).
std::optional<std::string> source_of(const mq::message& m) {
  for (const auto& x : m.extra) {
    if (x.key != "sqsSourceQueue") continue;
    const auto v = json::parse(x.json, nullptr, false);
    if (v.is_string()) return v.get<std::string>();
  }
  return std::nullopt;
}

json task_json(const move_task_info& t) {
  json out{{"Status", t.status},
           {"SourceArn", t.source_arn},
           {"ApproximateNumberOfMessagesMoved", t.moved},
           {"ApproximateNumberOfMessagesToMove", t.to_move},
           {"StartedTimestamp", t.started_ms}};
  if (t.status == "RUNNING") out["TaskHandle"] = t.handle;
  if (!t.destination_arn.empty()) out["DestinationArn"] = t.destination_arn;
  if (t.max_per_second > 0) out["MaxNumberOfMessagesPerSecond"] = t.max_per_second;
  if (!t.failure_reason.empty()) out["FailureReason"] = t.failure_reason;
  return out;
}

}  // namespace

bool actions::dead_lettered(const call& c, const mq::catalog_entry& e, const mq::delivered_message& d) {
  const auto policy = redrive_policy_of(e);
  if (!policy || d.receive_count.value_or(1) <= policy->max_receive_count) return false;
  // The dead-letter queue may have gone since the policy was set: then the message stays.
  const auto target = c.s.catalog_.find(policy->target_name);
  if (!target || target->account != e.account) return false;
  (void)c.s.catalog_.move(e.name, d.broker_message_id, d.receipt, target->name, mq::move_kind::dead_letter);
  return true;  // moved, or no longer held by this receipt: either way not handed out
}

json actions::list_dead_letter_source_queues(const call& c) {
  const auto e = entry_of(c);
  const auto max = optional_int(c.p, "MaxResults", 1, 1000);
  std::string after = optional_string(c.p, "NextToken").value_or("");
  const std::size_t page = max ? static_cast<std::size_t>(*max) : 1000;
  json urls = json::array();
  bool more = false;
  for (;;) {
    const auto entries = c.s.catalog_.list("", after, 500);
    for (const auto& q : entries) {
      after = q.name;
      const auto policy = q.account == c.account ? redrive_policy_of(q) : std::nullopt;
      if (!policy || policy->target_name != e.name || policy->target_account != e.account) continue;
      if (urls.size() == page) {
        more = true;
        break;
      }
      urls.push_back(url_of(c, q.account, q.name));
    }
    if (more || entries.size() < 500) break;
  }
  json out{{"queueUrls", urls}};
  if (more && max) {
    const auto last = urls.back().get<std::string>();
    out["NextToken"] = last.substr(last.rfind('/') + 1);
  }
  return out;
}

json actions::start_message_move_task(const call& c) {
  const auto source_arn = required_string(c.p, "SourceArn");
  const auto source = parse_queue_arn(source_arn);
  const auto dlq = source && source->account == c.account ? c.s.catalog_.find(source->name) : std::nullopt;
  if (!dlq || dlq->account != c.account) throw error("ResourceNotFoundException", "The source queue does not exist.");
  // Only a dead-letter queue (the target of some queue's RedrivePolicy) is a source.
  bool is_dlq = false;
  for (std::string after;;) {
    const auto entries = c.s.catalog_.list("", after, 500);
    for (const auto& q : entries) {
      after = q.name;
      const auto policy = q.account == c.account ? redrive_policy_of(q) : std::nullopt;
      is_dlq = is_dlq || (policy && policy->target_name == dlq->name);
    }
    if (is_dlq || entries.size() < 500) break;
  }
  if (!is_dlq) throw error("InvalidParameterValue", "Source queue must be configured as a Dead Letter Queue.");
  move_task_info info;
  info.source_arn = source_arn;
  std::optional<std::string> destination;
  if (const auto d = optional_string(c.p, "DestinationArn")) {
    const auto ref = parse_queue_arn(*d);
    const auto q = ref && ref->account == c.account ? c.s.catalog_.find(ref->name) : std::nullopt;
    if (!q || q->account != c.account)
      throw error("ResourceNotFoundException", "The destination queue does not exist.");
    info.destination_arn = *d;
    destination = q->name;
  }
  info.max_per_second = optional_int(c.p, "MaxNumberOfMessagesPerSecond", 1, 500).value_or(0);
  const auto counts = queue_of(c, *dlq)->metrics();
  info.to_move = counts.pending + counts.in_flight + counts.delayed;
  // Each step claims up to max messages of the dead-letter queue (a claim that
  // a crash cuts short reappears there) and moves each to its destination.
  auto step = [&s = c.s, from = *dlq, destination, account = c.account](const std::stop_token&,
                                                                        std::size_t max) -> std::size_t {
    const auto q = s.queue_of(from);
    const auto got = q->poll(max);
    for (const auto& d : got) {
      const auto to = destination ? destination : source_of(d.body);
      const auto target = to ? s.catalog_.find(*to) : std::nullopt;
      if (!target || target->account != account) {
        (void)q->defer(d.receipt);
        throw std::runtime_error(
            fmt::format("message {} has no source queue to return to (give a DestinationArn)", d.broker_message_id));
      }
      // False only when the claim lapsed meanwhile: the message is still in the dead-letter queue.
      (void)s.catalog_.move(from.name, d.broker_message_id, d.receipt, target->name, mq::move_kind::redrive);
    }
    return got.size();
  };
  return {{"TaskHandle", c.s.tasks_->start(std::move(info), std::move(step))}};
}

json actions::list_message_move_tasks(const call& c) {
  const auto source_arn = required_string(c.p, "SourceArn");
  const auto max = optional_int(c.p, "MaxResults", 1, 10).value_or(1);
  json results = json::array();
  for (const auto& t : c.s.tasks_->list(source_arn, static_cast<std::size_t>(max))) results.push_back(task_json(t));
  return {{"Results", results}};
}

json actions::cancel_message_move_task(const call& c) {
  const auto t = c.s.tasks_->cancel(required_string(c.p, "TaskHandle"));
  return {{"ApproximateNumberOfMessagesMoved", t.moved}};
}

}  // namespace spool::serve::sqs
