// The console's message-queue API: queues' messages and quarantined rows
// through mq::browser; redrive through mq::queue (audited with the console
// user and the reason entered), release and extend of a claimed message
// through its current receipt, and purge.
#include <fmt/format.h>

#include "serve/console/api.hpp"
#include "spool/mq/browser.hpp"
#include "spool/mq/catalog.hpp"
#include "spool/mq/queue.hpp"

namespace spool::serve::console {

namespace {

// whole: the payload is shown (pages carry only its first characters, which
// may cut a member that redaction must hide, so pages show none).
nlohmann::json message_json(const mq::message_view& m, bool whole) {
  nlohmann::json j{{"queue", m.queue},
                   {"id", m.id},
                   {"group", m.group ? nlohmann::json(*m.group) : nlohmann::json(nullptr)},
                   {"state", std::string(mq::to_string(m.state))},
                   {"visible_at", time_text(m.visible_at)},
                   {"created_at", time_text(m.created_at)},
                   {"receive_count", m.receive_count},
                   {"payload_bytes", m.payload_bytes}};
  if (whole) put_payload(j, m.payload);
  return j;
}

nlohmann::json quarantined_json(const mq::quarantined_view& q, bool whole) {
  nlohmann::json j{
      {"queue", q.queue},
      {"id", q.id},
      {"group", q.group ? nlohmann::json(*q.group) : nlohmann::json(nullptr)},
      {"error_message", q.error_message},
      {"receive_count", q.receive_count ? nlohmann::json(*q.receive_count) : nlohmann::json(nullptr)},
      {"created_at", q.created_at ? nlohmann::json(time_text(*q.created_at)) : nlohmann::json(nullptr)},
      {"failed_at", time_text(q.failed_at)},
      {"payload_bytes", q.payload_bytes}};
  if (whole) put_payload(j, q.payload);
  return j;
}

std::optional<std::chrono::seconds> age_param(const http_request& r) {
  const auto text = text_param(r, "min_age", 12);
  if (text.empty()) return std::nullopt;
  std::int64_t n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') throw api_error{400, "invalid_age", "min_age is a whole number of seconds"};
    n = n * 10 + (c - '0');
  }
  return std::chrono::seconds(n);
}

// The quarantine filter of a page's parameters, or of a redrive's body.
mq::quarantine_filter quarantine_filter_of(std::string queue, std::string group, std::string id_prefix,
                                           std::string reason) {
  mq::quarantine_filter f;
  f.queue = std::move(queue);
  if (!group.empty()) f.group = std::move(group);
  f.id_prefix = std::move(id_prefix);
  f.reason_contains = std::move(reason);
  return f;
}

// The ids of up to max quarantined rows the filter matches; more when some follow.
std::vector<std::string> matching_quarantined(mq::browser& b, mq::quarantine_filter f, std::size_t max,
                                              bool& more) {
  std::vector<std::string> ids;
  f.limit = 500;
  for (;;) {
    const auto page = b.quarantined(f);
    for (const auto& r : page.rows) {
      if (ids.size() == max) {
        more = true;
        return ids;
      }
      ids.push_back(r.id);
    }
    if (!page.next) return ids;
    f.after = *page.next;
  }
}

std::string required_queue(const http_request& r) {
  auto q = text_param(r, "queue");
  if (q.empty()) throw api_error{400, "missing_parameter", "queue is required"};
  return q;
}

}  // namespace

nlohmann::json mq_read(api_context& ctx, std::string_view route, const http_request& r) {
  if (route == "messages") {
    mq::message_filter f;
    f.queue = required_queue(r);
    if (const auto g = text_param(r, "group"); !g.empty()) f.group = g;
    f.state = mq::parse_row_state(text_param(r, "state", 16));
    f.id_prefix = text_param(r, "id_prefix");
    f.min_age = age_param(r);
    f.after = text_param(r, "after");
    f.limit = limit_param(r);
    const auto page = ctx.mq->messages(f);
    nlohmann::json out{{"messages", nlohmann::json::array()}, {"next", nullptr}};
    for (const auto& m : page.messages) out["messages"].push_back(message_json(m, false));
    if (page.next) out["next"] = *page.next;
    // A dead-letter queue's page offers to redrive its messages to these.
    out["dead_letter_for"] = dead_letter_sources(ctx, f.queue);
    return out;
  }
  if (route == "message") {
    const auto queue = required_queue(r);
    const auto m = ctx.mq->message(queue, text_param(r, "id"));
    if (!m) throw api_error{404, "not_found", "the queue holds no message with that id"};
    return message_json(*m, true);
  }
  if (route == "quarantined") {
    auto f = quarantine_filter_of(required_queue(r), text_param(r, "group"), text_param(r, "id_prefix"),
                                  text_param(r, "reason"));
    f.after = text_param(r, "after");
    f.limit = limit_param(r);
    const auto page = ctx.mq->quarantined(f);
    nlohmann::json out{{"rows", nlohmann::json::array()}, {"next", nullptr}};
    for (const auto& q : page.rows) out["rows"].push_back(quarantined_json(q, false));
    if (page.next) out["next"] = *page.next;
    return out;
  }
  if (route == "quarantined_message") {
    const auto queue = required_queue(r);
    const auto q = ctx.mq->quarantined_message(queue, text_param(r, "id"));
    if (!q) throw api_error{404, "not_found", "the queue's quarantine holds no row with that id"};
    return quarantined_json(*q, true);
  }
  throw api_error{404, "unknown_route", "no such console API"};
}

nlohmann::json mq_action(api_context& ctx, std::string_view route, const nlohmann::json& body,
                         const actor& who) {
  if (route == "redrive") {
    const auto queue = text_member(body, "queue", true);
    mq::redrive_options o;
    o.ids = ids_member(body, "ids");
    const auto all = body.find("all");
    if (all != body.end() && !all->is_boolean())
      throw api_error{400, "invalid_member", "\"all\" must be true or false"};
    if (o.ids.empty() == !(all != body.end() && all->get<bool>())) {
      throw api_error{400, "missing_member", "give either the ids to redrive or \"all\": true"};
    }
    // "all" with a filter: the rows it matches, up to 1,000 a call (more: call again).
    bool more = false;
    auto f = quarantine_filter_of(queue, text_member(body, "group", false, 128),
                                  text_member(body, "id_prefix", false, 200),
                                  text_member(body, "reason_contains", false, 500));
    if (o.ids.empty() && (f.group || !f.id_prefix.empty() || !f.reason_contains.empty())) {
      o.ids = matching_quarantined(*ctx.mq, f, 1000, more);
      if (o.ids.empty())
        return {{"redriven", nlohmann::json::array()},
                {"conflicts", nlohmann::json::array()},
                {"missing", nlohmann::json::array()},
                {"more", false}};
    }
    o.reason = text_member(body, "reason", false, 500);
    if (o.reason.empty()) o.reason = "redrive from the console";
    o.actor = who.user;
    mq::queue q(ctx.db, {.name = queue, .schema = ctx.schema});
    const auto result = q.redrive(o);
    return {{"redriven", result.redriven},
            {"conflicts", result.conflicts},
            {"missing", result.missing},
            {"more", more}};
  }
  if (route == "redrive_dead_letters") return redrive_dead_letters(ctx, body);
  if (route == "purge") {
    // The confirmation repeats the queue's name, so a stale form cannot purge another queue.
    const auto queue = text_member(body, "queue", true);
    if (text_member(body, "confirm", true) != queue) {
      throw api_error{400, "confirmation_mismatch", "\"confirm\" must repeat the queue's name"};
    }
    mq::catalog(ctx.db, ctx.schema).purge(queue);
    return {{"purged", queue}};
  }
  if (route == "release" || route == "extend") {
    const auto queue = text_member(body, "queue", true);
    const auto id = text_member(body, "id", true);
    const auto m = ctx.mq->message(queue, id);
    if (!m) throw api_error{404, "not_found", "the queue holds no message with that id"};
    if (!m->receipt)
      throw api_error{409, "not_claimed", "the message is not claimed: nothing to release or extend"};
    mq::queue q(ctx.db, {.name = queue, .schema = ctx.schema});
    if (route == "release") {
      if (!q.nack(*m->receipt))
        throw api_error{409, "claim_ended", "the claim ended meanwhile: nothing changed"};
      return {{"released", id}};
    }
    const auto it = body.find("seconds");
    if (it == body.end() || !it->is_number_integer() || it->get<std::int64_t>() < 1 ||
        it->get<std::int64_t>() > 43200) {
      throw api_error{400, "invalid_member", "\"seconds\" must be a whole number from 1 to 43,200"};
    }
    q.extend_visibility(*m->receipt, std::chrono::seconds(it->get<std::int64_t>()));
    return {{"extended", id}, {"seconds", it->get<std::int64_t>()}};
  }
  throw api_error{404, "unknown_route", "no such console action"};
}

}  // namespace spool::serve::console
