// What both outbox store backends share (same column order): inspect rows →
// summaries, a full row → its detail, audit rows → records, and replay's
// per-id statuses for the rows it locked.
#include <string>
#include <unordered_map>
#include <vector>

#include "outbox/store.hpp"

namespace spool::outbox::detail {

std::vector<message_summary> summaries_of(const std::vector<row>& rows) {
  auto opt_time = [](const std::optional<std::string>& s) {
    return s ? std::optional<time_point>(from_micros(std::stoll(*s))) : std::nullopt;
  };
  std::vector<message_summary> out;
  for (const auto& r : rows) {
    message_summary m;
    m.pos = {static_cast<std::uint64_t>(std::stoull(r[1].value_or("0"))), std::stoll(*r[0])};
    m.id = *r[2];
    m.topic = *r[3];
    m.payload_version = static_cast<std::uint16_t>(std::stoul(*r[4]));
    m.ordering_key = r[5].value_or("");
    m.idempotency_key = r[6].value_or("");
    m.state = parse_message_state(*r[7]);
    m.claim_count = static_cast<std::uint32_t>(std::stoul(*r[8]));
    m.failure_count = static_cast<std::uint32_t>(std::stoul(*r[9]));
    m.available_at = from_micros(std::stoll(*r[10]));
    m.created_at = from_micros(std::stoll(*r[11]));
    m.updated_at = from_micros(std::stoll(*r[12]));
    m.lease_owner = r[13];
    m.leased_until = opt_time(r[14]);
    m.delivered_at = opt_time(r[15]);
    m.dead_lettered_at = opt_time(r[16]);
    m.last_error_code = r[17];
    m.last_error = r[18];
    out.push_back(std::move(m));
  }
  return out;
}

message_detail detail_of(full_row&& r) {
  message_detail d;
  auto& m = d.summary;
  auto& e = r.message;
  m.id = std::move(e.id);
  m.topic = std::move(e.topic);
  m.payload_version = e.payload_version;
  m.ordering_key = std::move(e.ordering_key);
  m.idempotency_key = std::move(e.idempotency_key);
  m.state = r.state;
  m.claim_count = e.claim_count;
  m.failure_count = e.failure_count;
  m.available_at = e.available_at.value_or(time_point{});
  m.created_at = e.created_at.value_or(time_point{});
  m.updated_at = r.updated_at;
  m.lease_owner = std::move(r.lease_owner);
  m.leased_until = r.leased_until;
  m.delivered_at = r.delivered_at;
  m.dead_lettered_at = r.dead_lettered_at;
  m.last_error_code = std::move(r.last_error_code);
  m.last_error = std::move(r.last_error);
  m.pos = e.pos.value_or(position{});
  d.payload = std::move(e.payload);
  d.metadata = std::move(e.metadata);
  return d;
}

std::vector<replay_record> records_of(const std::vector<row>& rows) {
  std::vector<replay_record> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    replay_record a;
    a.replay_id = r.at(0).value_or("");
    a.message_id = r.at(1).value_or("");
    a.previous_state = parse_message_state(r.at(2).value_or(""));
    a.requested_by = r.at(3).value_or("");
    a.reason = r.at(4).value_or("");
    a.requested_at = from_micros(std::stoll(r.at(5).value_or("0")));
    a.available_at = from_micros(std::stoll(r.at(6).value_or("0")));
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<param> inspect_filters(const inspect_query& q) {
  auto text = [](const std::optional<std::string>& s) { return s ? param(*s) : param(nullptr); };
  return {text(q.ordering_key), text(q.id_prefix), q.min_age ? param(q.min_age->count()) : param(nullptr)};
}

bool replay_conflicts(const std::vector<std::string>& ids, const std::vector<row>& locked,
                      store_backend::replay_outcome& out) {
  std::unordered_map<std::string, std::string> states;
  for (const auto& r : locked) states[*r[0]] = *r[1];
  bool bad = false;
  for (const auto& id : ids) {
    auto it = states.find(id);
    replay_item_status s = replay_item_status::replayable;
    if (it == states.end()) {
      s = replay_item_status::missing;
    } else if (it->second == "pending") {
      s = replay_item_status::pending;
    } else if (it->second == "leased") {
      s = replay_item_status::leased;
    }
    bad = bad || s != replay_item_status::replayable;
    out.statuses.emplace_back(id, s);
  }
  out.conflict = bad;
  return bad;
}

}  // namespace spool::outbox::detail
