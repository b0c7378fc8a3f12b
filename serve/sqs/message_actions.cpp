// The message actions: SendMessage(Batch), DeleteMessage(Batch) and
// ChangeMessageVisibility(Batch), over mq::queue (ReceiveMessage:
// receive_action.cpp). Batch entries fail one
// by one in Failed; they never fail the whole call.
#include <fmt/format.h>

#include <mutex>
#include <set>

#include "common/text/base64.hpp"
#include "common/uuid.hpp"
#include "serve/sqs/actions.hpp"
#include "serve/sqs/attributes.hpp"
#include "serve/sqs/batch.hpp"
#include "serve/sqs/fifo.hpp"
#include "serve/sqs/md5.hpp"
#include "serve/sqs/params.hpp"
#include "spool/error.hpp"
#include "spool/tx.hpp"

namespace spool::serve::sqs {

namespace {

using json = nlohmann::json;

bool valid_attribute_name(const std::string& n) {
  if (n.empty() || n.size() > 256 || n.front() == '.' || n.back() == '.' ||
      n.find("..") != std::string::npos) {
    return false;
  }
  if (n.rfind("AWS.", 0) == 0 || n.rfind("Amazon.", 0) == 0) return false;
  return std::all_of(n.begin(), n.end(), [](unsigned char ch) {
    return std::isalnum(ch) || ch == '_' || ch == '-' || ch == '.';
  });
}

std::vector<mq::message_attribute> attributes_of(const json& p) {
  std::vector<mq::message_attribute> out;
  if (!p.contains("MessageAttributes")) return out;
  const auto& m = p["MessageAttributes"];
  if (!m.is_object()) throw error("InvalidParameterValue", "MessageAttributes must be a map.");
  if (m.size() > 10) throw error("InvalidParameterValue", "A message has at most 10 message attributes.");
  for (const auto& [name, v] : m.items()) {
    if (!valid_attribute_name(name)) {
      throw error("InvalidParameterValue", fmt::format("Message attribute name '{}' is invalid.", name));
    }
    if (!v.is_object())
      throw error("InvalidParameterValue", fmt::format("Message attribute {} must be a map.", name));
    const auto type = optional_string(v, "DataType");
    if (!type)
      throw error("InvalidParameterValue",
                  fmt::format("The message attribute '{}' must contain a DataType.", name));
    const auto base = attribute_base_type(*type);
    if ((base != "String" && base != "Number" && base != "Binary") || type->size() > 256) {
      throw error("InvalidParameterValue",
                  fmt::format("The type of message attribute '{}' is invalid.", name));
    }
    mq::message_attribute a{name, *type, {}};
    if (base == "Binary") {
      const auto b64 = optional_string(v, "BinaryValue");
      auto bytes = b64 ? spool::detail::base64_decode(*b64) : std::nullopt;
      if (!bytes) {
        throw error("InvalidParameterValue",
                    fmt::format("Message attribute '{}' needs a base64 BinaryValue.", name));
      }
      a.value = std::move(*bytes);
    } else {
      const auto s = optional_string(v, "StringValue");
      if (!s || s->empty()) {
        throw error("InvalidParameterValue",
                    fmt::format("Message attribute '{}' must contain a StringValue.", name));
      }
      if (!valid_message_text(*s)) {
        throw error("InvalidParameterValue",
                    fmt::format("Message attribute '{}' has characters SQS forbids.", name));
      }
      if (base == "Number") {
        char* end = nullptr;
        (void)std::strtod(s->c_str(), &end);
        if (end != s->c_str() + s->size()) {
          throw error("InvalidParameterValue", fmt::format("Message attribute '{}' is not a number.", name));
        }
      }
      a.value = *s;
    }
    out.push_back(std::move(a));
  }
  return out;
}

struct outgoing {
  mq::message m;
  std::chrono::seconds delay{0};
  std::optional<fifo_send> fifo;  // on a FIFO queue
};

// A SendMessage's (or one batch entry's) message, validated against the queue.
outgoing message_of(const json& p, const mq::catalog_entry& e) {
  auto body = required_string(p, "MessageBody");
  if (body.empty()) throw error("MissingParameter", "The request must contain the parameter MessageBody.");
  if (!valid_message_text(body)) {
    throw error("InvalidMessageContents", "Invalid binary character or invalid UTF-8 in the message body.");
  }
  outgoing o;
  o.m.mediation_type = "SQS";
  o.m.mediation_target = e.name;
  o.m.body = std::move(body);
  o.m.attributes = attributes_of(p);
  std::size_t size = o.m.body->size();
  for (const auto& a : o.m.attributes) size += a.name.size() + a.data_type.size() + a.value.size();
  const auto max = static_cast<std::size_t>(effective_int(e, "MaximumMessageSize"));
  if (size > max) {
    throw error(
        "InvalidParameterValue",
        fmt::format("One or more parameters are invalid. Reason: Message must be shorter than {} bytes.",
                    max));
  }
  if (is_fifo_name(e.name)) {
    o.fifo = fifo_send_of(p, e, *o.m.body);  // a FIFO message takes only the queue's delay
    o.delay = std::chrono::seconds(effective_int(e, "DelaySeconds"));
    return o;
  }
  if (p.contains("MessageGroupId") || p.contains("MessageDeduplicationId")) {
    throw error("InvalidParameterValue",
                "MessageGroupId and MessageDeduplicationId are for FIFO queues only.");
  }
  o.delay = std::chrono::seconds(
      optional_int(p, "DelaySeconds", 0, 900).value_or(effective_int(e, "DelaySeconds")));
  return o;
}

json sent(const std::string& id, const mq::message& m) {
  json out{{"MessageId", id}, {"MD5OfMessageBody", md5_hex(*m.body)}};
  if (!m.attributes.empty()) out["MD5OfMessageAttributes"] = md5_of_attributes(m.attributes);
  return out;
}

// Sends FIFO messages in one transaction, in order: each takes the queue's
// next sequence number unless its deduplication id was sent within five
// minutes (then nothing is sent and the first send's id is answered).
std::vector<json> send_fifo(mq::catalog& catalog, database& db, std::mutex& send_lock, mq::queue& q,
                            std::vector<outgoing>& batch) {
  std::vector<json> out;
  const std::lock_guard ordered(send_lock);
  spool::tx t(db);
  for (auto& o : batch) {
    o.m.id = spool::detail::uuid_v7();
    const auto ticket =
        catalog.record_fifo_send(t, o.m.mediation_target, o.fifo->dedup_key, o.m.id, dedup_window);
    if (!ticket.duplicate) {
      stamp_fifo(o.m, *o.fifo, ticket.sequence_number);
      (void)q.publish(t, o.m, o.delay);
    }
    auto r = sent(ticket.message_id, o.m);
    r["SequenceNumber"] = fmt::format("{:020}", ticket.sequence_number);
    out.push_back(std::move(r));
  }
  t.commit();
  return out;
}

error receipt_error(const spool::error& e, const char* not_found_code) {
  if (e.code() == errc::invalid_argument)
    return error("ReceiptHandleIsInvalid", "The receipt handle is not valid.");
  if (e.code() == errc::not_found)
    return error(not_found_code, "The message is not in flight (its receipt is stale).");
  throw e;
}

}  // namespace

json actions::send_message(const call& c) {
  const auto e = entry_of(c);
  auto o = message_of(c.p, e);
  if (o.fifo) {
    std::vector<outgoing> one{std::move(o)};
    return send_fifo(c.s.catalog_, c.s.db_, c.s.send_lock(e.name), *queue_of(c, e), one).at(0);
  }
  const auto r = queue_of(c, e)->publish(o.m, o.delay);
  return sent(r.ids.at(0), o.m);
}

json actions::send_message_batch(const call& c) {
  const auto e = entry_of(c);
  const auto& entries = batch_entries(c.p);
  json ok = json::array(), bad = json::array();
  struct same_delay {
    std::vector<std::string> ids;
    std::vector<mq::message> messages;
  };
  std::map<std::chrono::seconds, same_delay> by_delay;
  std::vector<outgoing> fifo;
  std::vector<std::string> fifo_ids;
  std::size_t total = 0;
  for (const auto& entry : entries) {
    const auto id = entry["Id"].get<std::string>();
    try {
      auto o = message_of(entry, e);
      total += o.m.body->size();
      if (o.fifo) {
        fifo_ids.push_back(id);
        fifo.push_back(std::move(o));
      } else {
        auto& group = by_delay[o.delay];
        group.ids.push_back(id);
        group.messages.push_back(std::move(o.m));
      }
    } catch (const error& err) {
      bad.push_back(failed(id, err));
    }
  }
  if (total > static_cast<std::size_t>(effective_int(e, "MaximumMessageSize"))) {
    throw error("BatchRequestTooLong",
                "The batch's messages together exceed the queue's MaximumMessageSize.");
  }
  const auto q = queue_of(c, e);
  if (!fifo.empty()) {
    auto results = send_fifo(c.s.catalog_, c.s.db_, c.s.send_lock(e.name), *q, fifo);
    for (std::size_t i = 0; i < results.size(); ++i) {
      results[i]["Id"] = fifo_ids[i];
      ok.push_back(std::move(results[i]));
    }
  }
  for (const auto& [delay, group] : by_delay) {
    const auto r = q->publish_batch(group.messages, delay);
    for (std::size_t i = 0; i < group.ids.size(); ++i) {
      auto s = sent(r.ids.at(i), group.messages[i]);
      s["Id"] = group.ids[i];
      ok.push_back(std::move(s));
    }
  }
  return batch_result(std::move(ok), std::move(bad));
}

json actions::delete_message(const call& c) {
  const auto e = entry_of(c);
  const auto receipt = required_string(c.p, "ReceiptHandle");
  try {
    queue_of(c, e)->ack(receipt);
  } catch (const spool::error& err) {
    // A stale receipt deletes nothing and succeeds, as in SQS.
    if (err.code() != errc::not_found) throw receipt_error(err, "ReceiptHandleIsInvalid");
  }
  return json::object();
}

json actions::delete_message_batch(const call& c) {
  const auto e = entry_of(c);
  const auto& entries = batch_entries(c.p);
  const auto q = queue_of(c, e);
  json ok = json::array(), bad = json::array();
  // The well-formed receipts are deleted in one statement (mq::queue::ack_batch).
  std::vector<std::string> ids, receipts;
  for (const auto& entry : entries) {
    const auto id = entry["Id"].get<std::string>();
    try {
      auto receipt = required_string(entry, "ReceiptHandle");
      try {
        (void)mq::receipt_id(receipt);
      } catch (const spool::error& err) {
        throw receipt_error(err, "ReceiptHandleIsInvalid");
      }
      ids.push_back(id);
      receipts.push_back(std::move(receipt));
    } catch (const error& err) {
      bad.push_back(failed(id, err));
    }
  }
  if (!receipts.empty()) {
    // A stale receipt deletes nothing and succeeds, as in SQS.
    (void)q->ack_batch(receipts);
    for (const auto& id : ids) ok.push_back({{"Id", id}});
  }
  return batch_result(std::move(ok), std::move(bad));
}

namespace {
void change_visibility(mq::queue& q, const json& p) {
  const auto receipt = required_string(p, "ReceiptHandle");
  const auto window = optional_int(p, "VisibilityTimeout", 0, 43200);
  if (!window) throw error("MissingParameter", "The request must contain the parameter VisibilityTimeout.");
  try {
    if (*window == 0) {
      if (!q.defer(receipt)) throw error("MessageNotInflight", "The message is not in flight.");
    } else {
      q.extend_visibility(receipt, std::chrono::seconds(*window));
    }
  } catch (const spool::error& err) {
    throw receipt_error(err, "MessageNotInflight");
  }
}
}  // namespace

json actions::change_message_visibility(const call& c) {
  const auto e = entry_of(c);
  change_visibility(*queue_of(c, e), c.p);
  return json::object();
}

json actions::change_message_visibility_batch(const call& c) {
  const auto e = entry_of(c);
  const auto& entries = batch_entries(c.p);
  const auto q = queue_of(c, e);
  json ok = json::array(), bad = json::array();
  for (const auto& entry : entries) {
    const auto id = entry["Id"].get<std::string>();
    try {
      change_visibility(*q, entry);
      ok.push_back({{"Id", id}});
    } catch (const error& err) {
      bad.push_back(failed(id, err));
    }
  }
  return batch_result(std::move(ok), std::move(bad));
}

}  // namespace spool::serve::sqs
