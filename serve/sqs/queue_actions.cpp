// The queue actions: CreateQueue, GetQueueUrl, ListQueues, Get/SetQueueAttributes,
// DeleteQueue, PurgeQueue and the tags.
#include <fmt/format.h>

#include "serve/sqs/actions.hpp"
#include "serve/sqs/attributes.hpp"
#include "serve/sqs/fifo.hpp"
#include "serve/sqs/params.hpp"

namespace spool::serve::sqs {

namespace {

using json = nlohmann::json;

std::map<std::string, std::string> string_map(const json& p, const char* name) {
  std::map<std::string, std::string> out;
  if (!p.contains(name)) return out;
  if (!p[name].is_object()) throw error("InvalidParameterValue", fmt::format("{} must be a map.", name));
  for (const auto& [k, v] : p[name].items()) {
    if (!v.is_string()) throw error("InvalidParameterValue", fmt::format("{}.{} must be a string.", name, k));
    out[k] = v.get<std::string>();
  }
  return out;
}

std::vector<std::string> string_list(const json& p, const char* name) {
  std::vector<std::string> out;
  if (!p.contains(name)) return out;
  if (!p[name].is_array()) throw error("InvalidParameterValue", fmt::format("{} must be a list.", name));
  for (const auto& v : p[name]) {
    if (!v.is_string()) throw error("InvalidParameterValue", fmt::format("{} must hold strings.", name));
    out.push_back(v.get<std::string>());
  }
  return out;
}

void check_tags(const std::map<std::string, std::string>& tags) {
  if (tags.size() > 50) throw error("InvalidParameterValue", "A queue has at most 50 tags.");
  for (const auto& [k, v] : tags) {
    if (k.empty() || k.size() > 128 || v.size() > 256 || !valid_message_text(k) || !valid_message_text(v)) {
      throw error("InvalidParameterValue", "Tag keys are 1 to 128 characters and values at most 256.");
    }
  }
}

}  // namespace

void actions::check_redrive_target(const call& c, const std::map<std::string, std::string>& attributes, bool fifo) {
  const auto it = attributes.find("RedrivePolicy");
  if (it == attributes.end() || it->second.empty()) return;
  const auto policy = parse_redrive_policy(it->second);
  const auto target = policy.target_account == c.account ? c.s.catalog_.find(policy.target_name) : std::nullopt;
  if (!target || target->account != c.account) {
    throw error("InvalidParameterValue",
                "Value for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist.");
  }
  if (is_fifo_name(target->name) != fifo) {
    throw error("InvalidParameterValue",
                "Value for parameter RedrivePolicy is invalid. Reason: Dead-letter queue must be same type of "
                "queue as the source.");
  }
}

namespace {

std::int64_t seconds_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

json actions::create_queue(const call& c) {
  const auto name = required_string(c.p, "QueueName");
  if (!valid_queue_name(name)) {
    throw error("InvalidParameterValue",
                "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length");
  }
  auto attributes = string_map(c.p, "Attributes");
  const bool fifo = is_fifo_name(name);
  if (fifo && attributes.count("FifoQueue") == 0) {
    throw error("InvalidParameterValue",
                "The queue should either have FifoQueue attribute set to true or its name must not end with .fifo");
  }
  check_queue_attributes(attributes, fifo);
  check_redrive_target(c, attributes, fifo);
  if (!fifo) attributes.erase("FifoQueue");
  const auto tags = string_map(c.p, "tags");
  check_tags(tags);
  mq::catalog_entry e{name, c.account, attributes, tags, {}, {}};
  if (c.s.catalog_.create(e) == mq::create_outcome::exists) {
    const auto existing = c.s.catalog_.find(name);
    if (!existing) throw error("QueueDeletedRecently", "The queue was deleted while it was being created.");
    bool same = existing->account == c.account;
    for (const auto& [k, v] : attributes) same = same && effective_attribute(*existing, k) == v;
    if (!same)
      throw error("QueueNameExists", fmt::format("A queue named {} exists with other attributes.", name));
  }
  return {{"QueueUrl", url_of(c, c.account, name)}};
}

json actions::get_queue_url(const call& c) {
  const auto name = required_string(c.p, "QueueName");
  const auto owner = optional_string(c.p, "QueueOwnerAWSAccountId").value_or(c.account);
  const auto e = valid_queue_name(name) ? c.s.catalog_.find(name) : std::nullopt;
  if (!e || e->account != c.account || owner != c.account) {
    throw error("QueueDoesNotExist", "The specified queue does not exist.");
  }
  return {{"QueueUrl", url_of(c, c.account, name)}};
}

json actions::list_queues(const call& c) {
  const auto prefix = optional_string(c.p, "QueueNamePrefix").value_or("");
  const auto max = optional_int(c.p, "MaxResults", 1, 1000);
  const auto after = optional_string(c.p, "NextToken").value_or("");
  const std::size_t page = max ? static_cast<std::size_t>(*max) : 1000;
  json urls = json::array();
  std::string last = after;
  bool more = false;
  // Entries of other accounts are skipped, so a page may take several reads.
  for (;;) {
    const auto entries = c.s.catalog_.list(prefix, last, page + 1);
    for (const auto& e : entries) {
      last = e.name;
      if (e.account != c.account) continue;
      if (urls.size() == page) {
        more = true;
        break;
      }
      urls.push_back(url_of(c, e.account, e.name));
    }
    if (more || entries.size() < page + 1) break;
  }
  json out{{"QueueUrls", urls}};
  if (more && max)
    out["NextToken"] = urls.back().get<std::string>().substr(urls.back().get<std::string>().rfind('/') + 1);
  return out;
}

json actions::get_queue_attributes(const call& c) {
  const auto e = entry_of(c);
  auto names = string_list(c.p, "AttributeNames");
  const bool all = std::find(names.begin(), names.end(), "All") != names.end();
  for (const auto& n : names) {
    if (!is_known_attribute(n)) throw error("InvalidAttributeName", fmt::format("Unknown Attribute {}.", n));
  }
  const auto wanted = [&](const std::string& n) {
    return all || std::find(names.begin(), names.end(), n) != names.end();
  };
  json attrs = json::object();
  for (const auto& [k, v] : attribute_defaults()) {
    if (wanted(k)) attrs[k] = effective_attribute(e, k);
  }
  if (is_fifo_name(e.name)) {
    for (const char* k : {"FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"}) {
      if (wanted(k)) attrs[k] = effective_attribute(e, k);
    }
  }
  for (const auto& [k, v] : e.attributes) {
    if (wanted(k)) attrs[k] = v;
  }
  if (wanted("ApproximateNumberOfMessages") || wanted("ApproximateNumberOfMessagesNotVisible") ||
      wanted("ApproximateNumberOfMessagesDelayed")) {
    c.s.sweep(e);
    const auto m = queue_of(c, e)->metrics();
    if (wanted("ApproximateNumberOfMessages"))
      attrs["ApproximateNumberOfMessages"] = std::to_string(m.pending);
    if (wanted("ApproximateNumberOfMessagesNotVisible")) {
      attrs["ApproximateNumberOfMessagesNotVisible"] = std::to_string(m.in_flight);
    }
    if (wanted("ApproximateNumberOfMessagesDelayed"))
      attrs["ApproximateNumberOfMessagesDelayed"] = std::to_string(m.delayed);
  }
  if (wanted("CreatedTimestamp")) attrs["CreatedTimestamp"] = std::to_string(seconds_of(e.created));
  if (wanted("LastModifiedTimestamp"))
    attrs["LastModifiedTimestamp"] = std::to_string(seconds_of(e.modified));
  if (wanted("QueueArn"))
    attrs["QueueArn"] = fmt::format("arn:aws:sqs:{}:{}:{}", c.s.opts_.region, e.account, e.name);
  json out = json::object();
  if (!attrs.empty()) out["Attributes"] = attrs;
  return out;
}

json actions::set_queue_attributes(const call& c) {
  const auto e = entry_of(c);
  const auto attributes = string_map(c.p, "Attributes");
  check_queue_attributes(attributes, is_fifo_name(e.name));
  check_redrive_target(c, attributes, is_fifo_name(e.name));
  if (!c.s.catalog_.set_attributes(e.name, attributes)) {
    throw error("QueueDoesNotExist", "The specified queue does not exist.");
  }
  c.s.forget(e.name);
  return json::object();
}

json actions::delete_queue(const call& c) {
  const auto e = entry_of(c);
  if (!c.s.catalog_.remove(e.name)) throw error("QueueDoesNotExist", "The specified queue does not exist.");
  c.s.forget(e.name);
  return json::object();
}

json actions::purge_queue(const call& c) {
  const auto e = entry_of(c);
  {
    std::lock_guard lock(c.s.mu_);
    const auto now = std::chrono::steady_clock::now();
    auto& last = c.s.purged_[e.name];
    if (last != std::chrono::steady_clock::time_point{} && now - last < std::chrono::seconds(60)) {
      throw error("PurgeQueueInProgress",
                  fmt::format("Only one PurgeQueue operation on {} is allowed every 60 seconds.", e.name));
    }
    last = now;
  }
  c.s.catalog_.purge(e.name);
  return json::object();
}

json actions::tag_queue(const call& c) {
  const auto e = entry_of(c);
  auto tags = e.tags;
  for (const auto& [k, v] : string_map(c.p, "Tags")) tags[k] = v;
  check_tags(tags);
  (void)c.s.catalog_.tag(e.name, string_map(c.p, "Tags"));
  c.s.forget(e.name);
  return json::object();
}

json actions::untag_queue(const call& c) {
  const auto e = entry_of(c);
  (void)c.s.catalog_.tag(e.name, {}, string_list(c.p, "TagKeys"));
  c.s.forget(e.name);
  return json::object();
}

json actions::list_queue_tags(const call& c) {
  const auto e = entry_of(c);
  json out = json::object();
  if (!e.tags.empty()) out["Tags"] = e.tags;
  return out;
}

}  // namespace spool::serve::sqs
