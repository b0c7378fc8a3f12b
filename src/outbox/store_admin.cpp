// The outbox store's operator calls (outbox.md §6.3, §6.4): inspect, with its
// cursors and filters, one envelope, its replay history, the horizon, and replay.
#include <fmt/format.h>

#include <set>

#include "common/text/base64.hpp"
#include "common/uuid.hpp"
#include "outbox/store.hpp"
#include "outbox/store_calls.hpp"
#include "spool/outbox/store.hpp"

namespace spool::outbox {

namespace {

using detail::invalid;
using detail::observed;
using std::chrono::microseconds;

std::string make_cursor(const message_summary& m) {
  return "c" + spool::detail::base64url_encode(std::to_string(detail::micros(m.created_at)) + ":" + m.id);
}

// A cursor "c<base64url(µs:id)>", or an RFC 3339 time T meaning (T, "").
std::pair<std::int64_t, std::string> parse_cursor(const std::string& text) {
  std::optional<std::string> raw;
  if (text.size() > 1 && text[0] == 'c') {
    raw = spool::detail::base64url_decode(std::string_view(text).substr(1));
  }
  if (raw) {
    const auto colon = raw->find(':');
    if (colon != std::string::npos) {
      try {
        std::size_t used = 0;
        const auto us = std::stoll(raw->substr(0, colon), &used);
        if (used == colon) {
          const std::string id = raw->substr(colon + 1);
          if (id.size() > 255) invalid("value_outside_bounds", "cursor id is over 255 bytes");
          return {us, id};
        }
      } catch (const std::logic_error&) {
      }
    }
  }
  return {detail::micros(parse_time(text)), ""};
}

}  // namespace

inspect_page store::inspect(const inspect_query& q, const call_options& c) {
  if (q.limit < 1 || q.limit > options_.max_admin_batch) {
    invalid("invalid_admin_limit",
            fmt::format("limit = {} is outside 1..{}", q.limit, options_.max_admin_batch));
  }
  if (q.topic && q.topic->size() > 255) invalid("value_outside_bounds", "topic is over 255 bytes");
  if (q.ordering_key && q.ordering_key->size() > 255)
    invalid("value_outside_bounds", "ordering key is over 255 bytes");
  if (q.id_prefix && (q.id_prefix->empty() || q.id_prefix->size() > 255))
    invalid("value_outside_bounds", "an id prefix is 1..255 bytes");
  constexpr auto century = std::chrono::duration_cast<microseconds>(std::chrono::years(100));
  if (q.min_age && (q.min_age->count() < 0 || *q.min_age > century))
    invalid("value_outside_bounds", "a minimum age is 0..100 years");
  std::optional<std::pair<std::int64_t, std::string>> before;
  if (q.before) before = parse_cursor(*q.before);
  inspect_page page;
  page.messages = backend_->inspect(q, before, c);
  if (page.messages.size() == q.limit) page.next = make_cursor(page.messages.back());
  return page;
}

namespace {

void check_id(const std::string& id) {
  if (id.empty() || id.size() > 255) invalid("value_outside_bounds", "an envelope id is 1..255 bytes");
}

}  // namespace

std::optional<message_detail> store::get(const std::string& id, const call_options& c) {
  check_id(id);
  auto r = backend_->get(id, c);
  if (!r) return std::nullopt;
  return detail::detail_of(detail::decode_row(*r));
}

std::vector<replay_record> store::replay_history(const std::string& id, std::size_t limit,
                                                 const call_options& c) {
  check_id(id);
  if (limit < 1 || limit > options_.max_admin_batch) {
    invalid("invalid_admin_limit", fmt::format("limit = {} is outside 1..{}", limit, options_.max_admin_batch));
  }
  return detail::records_of(backend_->replay_history(id, limit, c));
}

horizon_info store::horizon(const call_options& c) { return backend_->horizon(c); }

replay_result store::replay(const replay_request& r, const call_options& c) {
  if (r.ids.empty()) invalid("replay_ids_required", "replay needs at least one id");
  if (r.ids.size() > options_.max_admin_batch) {
    invalid("invalid_admin_limit",
            fmt::format("{} ids; max_admin_batch is {}", r.ids.size(), options_.max_admin_batch));
  }
  if (r.requested_by.empty()) invalid("replay_requester_required", "replay needs requested_by");
  if (r.requested_by.size() > 255) invalid("value_outside_bounds", "requested_by is over 255 bytes");
  if (r.reason.empty()) invalid("replay_reason_required", "replay needs a reason");
  if (r.reason.size() > 4096) invalid("value_outside_bounds", "reason is over 4096 bytes");
  std::set<std::string_view> seen;
  for (const auto& id : r.ids) {
    if (id.empty()) invalid("replay_ids_required", "replay ids must not be empty");
    if (id.size() > 255) invalid("value_outside_bounds", "a replay id is over 255 bytes");
    if (!seen.insert(id).second) invalid("replay_duplicate_id", fmt::format("id {} is requested twice", id));
  }
  if (r.available_at && (*r.available_at < min_time() || *r.available_at > max_time())) {
    invalid("timestamp_out_of_range", "available_at is outside 0001..9999");
  }
  if (options_.replay_authorizer) {
    bool approved = false;
    try {
      const replay_request copy = r;
      approved = options_.replay_authorizer(copy);
    } catch (...) {
      approved = false;
    }
    if (!approved) {
      emit({operation::replay,
            false,
            0,
            {},
            {},
            0,
            0,
            microseconds(0),
            errc::unauthorized,
            "replay_unauthorized"});
      throw error(errc::unauthorized, "the replay authorizer denied the request", "replay_unauthorized");
    }
  }
  const std::string replay_id = spool::detail::uuid_v4();
  return observed(
      this, operation::replay, &store::emit,
      [&] {
        detail::store_backend::replay_outcome o;
        try {
          o = backend_->replay(r, replay_id, options_.replay_lock_timeout.count(), c);
        } catch (...) {
          detail::rethrow_translated();
        }
        if (o.conflict) throw replay_conflict(std::move(o.statuses));
        return replay_result{replay_id, std::move(o.previous)};
      },
      [](event& e, const replay_result& res) { e.count = res.items.size(); });
}

}  // namespace spool::outbox
