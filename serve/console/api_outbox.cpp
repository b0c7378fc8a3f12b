// The console's outbox API over outbox::store: pages of envelopes filtered by
// state, topic, ordering key, id prefix and age; one envelope with its replay
// audit; and the operator's audited replay and prune.
#include "serve/console/api.hpp"
#include "spool/outbox/store.hpp"

namespace spool::serve::console {

namespace {

outbox::store& store_of(api_context& ctx) {
  if (!ctx.outbox) throw api_error{409, "outbox_unavailable", ctx.outbox_missing};
  return *ctx.outbox;
}

nlohmann::json time_or_null(const std::optional<outbox::time_point>& t) {
  return t ? nlohmann::json(outbox::format_time(*t)) : nlohmann::json(nullptr);
}

nlohmann::json text_or_null(const std::optional<std::string>& s) {
  return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

nlohmann::json summary_json(const outbox::message_summary& m) {
  return {{"id", m.id},
          {"topic", m.topic},
          {"ordering_key", m.ordering_key},
          {"idempotency_key", m.idempotency_key},
          {"state", std::string(outbox::to_string(m.state))},
          {"claim_count", m.claim_count},
          {"failure_count", m.failure_count},
          {"available_at", outbox::format_time(m.available_at)},
          {"created_at", outbox::format_time(m.created_at)},
          {"updated_at", outbox::format_time(m.updated_at)},
          {"lease_owner", text_or_null(m.lease_owner)},
          {"leased_until", time_or_null(m.leased_until)},
          {"delivered_at", time_or_null(m.delivered_at)},
          {"dead_lettered_at", time_or_null(m.dead_lettered_at)},
          {"last_error_code", text_or_null(m.last_error_code)},
          {"last_error", text_or_null(m.last_error)}};
}

}  // namespace

nlohmann::json outbox_read(api_context& ctx, std::string_view route, const http_request& r) {
  auto& s = store_of(ctx);
  if (route == "list") {
    outbox::inspect_query q;
    if (const auto state = text_param(r, "state", 16); !state.empty())
      q.state = outbox::parse_message_state(state);
    if (const auto topic = text_param(r, "topic", 255); !topic.empty()) q.topic = topic;
    // "key" present and empty would mean unordered rows; the form sends
    // empty for "any", so only a non-empty key filters.
    if (const auto key = text_param(r, "key", 255); !key.empty()) q.ordering_key = key;
    if (const auto prefix = text_param(r, "id_prefix", 255); !prefix.empty()) q.id_prefix = prefix;
    constexpr std::int64_t century_s = std::chrono::seconds(std::chrono::years(100)).count();
    if (const auto age = seconds_param(r, "older_than", century_s))
      q.min_age = std::chrono::seconds(*age);
    if (const auto before = text_param(r, "before"); !before.empty()) q.before = before;
    q.limit = limit_param(r);
    const auto page = s.inspect(q);
    nlohmann::json out{{"envelopes", nlohmann::json::array()}, {"next", nullptr}};
    for (const auto& m : page.messages) out["envelopes"].push_back(summary_json(m));
    if (page.next) out["next"] = *page.next;
    return out;
  }
  if (route == "envelope") {
    const auto id = text_param(r, "id", 255);
    if (id.empty()) throw api_error{400, "missing_parameter", "id is required"};
    const auto d = s.get(id);
    auto history = nlohmann::json::array();
    for (const auto& a : s.replay_history(id)) {
      history.push_back({{"replay_id", a.replay_id},
                         {"previous_state", outbox::to_string(a.previous_state)},
                         {"requested_by", a.requested_by},
                         {"reason", a.reason},
                         {"requested_at", outbox::format_time(a.requested_at)},
                         {"available_at", outbox::format_time(a.available_at)}});
    }
    // A pruned envelope keeps its audit: show that rather than "not found".
    if (!d && history.empty()) throw api_error{404, "not_found", "no envelope has that id"};
    nlohmann::json out = d ? summary_json(d->summary) : nlohmann::json{{"id", id}, {"state", "pruned"}};
    out["replays"] = std::move(history);
    if (d) {
      put_payload(out, d->payload);
      out["payload_bytes"] = d->payload.size();
      out["payload_version"] = d->summary.payload_version;
      nlohmann::json meta = nlohmann::json::object();
      for (const auto& [k, v] : d->metadata) meta[k] = v;
      redact_secrets(meta);
      out["metadata"] = std::move(meta);
    }
    return out;
  }
  throw api_error{404, "unknown_route", "no such console API"};
}

nlohmann::json outbox_action(api_context& ctx, std::string_view route, const nlohmann::json& body,
                             const actor& who) {
  auto& s = store_of(ctx);
  if (route == "replay") {
    outbox::replay_request q;
    q.ids = ids_member(body, "ids", 100);
    if (q.ids.empty()) throw api_error{400, "missing_member", "\"ids\" names the envelopes to replay"};
    q.reason = text_member(body, "reason", true, 500);
    q.requested_by = who.user;
    const auto result = s.replay(q);
    nlohmann::json items = nlohmann::json::array();
    for (const auto& [id, was] : result.items)
      items.push_back({{"id", id}, {"previous_state", outbox::to_string(was)}});
    return {{"replay_id", result.replay_id}, {"items", items}};
  }
  if (route == "prune") {
    const auto state = text_member(body, "state", true, 16);
    const auto before = outbox::parse_time(text_member(body, "before", true, 64));
    const auto cut = outbox::cutoff::before(before);
    std::vector<std::string> pruned;
    if (state == "delivered") {
      pruned = s.prune_delivered(cut, 1000);
    } else if (state == "dead") {
      pruned = s.prune_dead(cut, 1000);
    } else {
      throw api_error{400, "invalid_state", "state must be delivered or dead"};
    }
    return {{"pruned", pruned.size()}};
  }
  throw api_error{404, "unknown_route", "no such console action"};
}

}  // namespace spool::serve::console
