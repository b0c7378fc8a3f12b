// The console's overview: every mq queue's counts, the op queue's and the
// outbox's (with how far the transaction horizon holds ordered claims
// back), each with the age of its oldest waiting work, read now.
#include <chrono>
#include <map>

#include "serve/console/api.hpp"
#include "serve/console/sampler.hpp"
#include "serve/sqs/attributes.hpp"
#include "serve/sqs/errors.hpp"
#include "spool/error.hpp"
#include "spool/mq/browser.hpp"
#include "spool/mq/catalog.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/store.hpp"

namespace spool::serve::console {

namespace {

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::map<std::string, std::string> dead_letter_queues(api_context& ctx) {
  std::map<std::string, std::string> out;
  try {
    mq::catalog catalog(ctx.db, ctx.schema);
    std::string after;
    for (;;) {
      const auto page = catalog.list("", after, 1000);
      for (const auto& e : page) {
        try {
          if (const auto p = sqs::redrive_policy_of(e)) out[e.name] = p->target_name;
        } catch (const sqs::error&) {
          // A policy the API would refuse today: the queue shows no dead-letter count.
        }
      }
      if (page.size() < 1000) break;
      after = page.back().name;
    }
  } catch (const spool::error&) {
    // No catalog (mq_catalog not migrated): no queue has a dead-letter queue.
  }
  return out;
}

nlohmann::json overview(api_context& ctx) {
  const auto now = now_s();
  const auto rows = ctx.mq->queues();
  std::map<std::string, std::int64_t> held;  // rows per queue, for dead-letter queues' counts
  for (const auto& q : rows) held[q.queue] = q.visible + q.in_flight + q.delayed;
  const auto dead_letter = dead_letter_queues(ctx);
  nlohmann::json queues = nlohmann::json::array();
  for (const auto& q : rows) {
    nlohmann::json j{
        {"queue", q.queue},
        {"visible", q.visible},
        {"in_flight", q.in_flight},
        {"delayed", q.delayed},
        {"quarantined", q.quarantined},
        {"dead_letter_queue", nullptr},
        {"dead_lettered", nullptr},
        {"oldest_age_s", q.oldest_waiting_created_at
                             ? nlohmann::json(std::max<std::int64_t>(0, now - *q.oldest_waiting_created_at))
                             : nlohmann::json(nullptr)}};
    if (const auto it = dead_letter.find(q.queue); it != dead_letter.end()) {
      j["dead_letter_queue"] = it->second;
      j["dead_lettered"] = held.count(it->second) ? held[it->second] : 0;
    }
    queues.push_back(std::move(j));
  }
  nlohmann::json out{{"engine", std::string(engine_name(ctx.db.kind()))}, {"mq", {{"queues", queues}}}};
  if (ctx.ops) {
    nlohmann::json types = nlohmann::json::array();
    ops::queue_stats total;
    for (const auto& t : ctx.ops->stats_by_type()) {
      total.pending += t.counts.pending;
      total.running += t.counts.running;
      total.failed += t.counts.failed;
      total.done_24h += t.counts.done_24h;
      total.cancelled += t.counts.cancelled;
      const auto oldest = t.oldest_pending_enqueued_at;
      types.push_back(
          {{"type", t.type},
           {"pending", t.counts.pending},
           {"running", t.counts.running},
           {"failed", t.counts.failed},
           {"done_24h", t.counts.done_24h},
           {"cancelled", t.counts.cancelled},
           {"oldest_pending_age_s",
            oldest ? nlohmann::json(std::max<std::int64_t>(0, now - *oldest)) : nlohmann::json(nullptr)}});
    }
    out["ops"] = {{"available", true},
                  {"table", ctx.ops->table()},
                  {"pending", total.pending},
                  {"running", total.running},
                  {"failed", total.failed},
                  {"done_24h", total.done_24h},
                  {"cancelled", total.cancelled},
                  {"types", std::move(types)}};
  } else {
    out["ops"] = {{"available", false}, {"why", ctx.ops_missing}};
  }
  if (ctx.outbox) {
    const auto b = ctx.outbox->backlog();
    const auto h = ctx.outbox->horizon();
    auto horizon = nlohmann::json{{"applies", h.applies}};
    if (h.applies) {
      horizon["horizon_xid"] = std::to_string(h.horizon_xid);
      horizon["next_xid"] = std::to_string(h.next_xid);
      horizon["held"] = h.held;
      horizon["oldest_transaction_age_s"] =
          h.oldest_transaction_age ? nlohmann::json(static_cast<double>(h.oldest_transaction_age->count()) / 1e6)
                                   : nlohmann::json(nullptr);
      horizon["oldest_transaction_pid"] =
          h.oldest_transaction_pid ? nlohmann::json(*h.oldest_transaction_pid) : nlohmann::json(nullptr);
    }
    out["outbox"] = {
        {"available", true},
        {"pending", b.pending},
        {"leased", b.leased},
        {"expired_leases", b.expired_leases},
        {"dead", b.dead},
        {"oldest_pending_age_s", b.oldest_pending_created_at
                                     ? nlohmann::json(static_cast<double>(b.oldest_pending_age.count()) / 1e6)
                                     : nlohmann::json(nullptr)},
        {"horizon", std::move(horizon)}};
  } else {
    out["outbox"] = {{"available", false}, {"why", ctx.outbox_missing}};
  }
  return out;
}

nlohmann::json throughput(api_context& ctx, const mq_sampler& sampler) {
  nlohmann::json out{{"mq", sampler.history()}};
  if (!ctx.ops) {
    out["ops"] = {{"available", false}, {"why", ctx.ops_missing}};
    return out;
  }
  // Every minute of the hour gets a point, so a quiet minute reads 0, not a line to the next busy one.
  const auto now_minute = now_s() / 60 * 60;
  std::map<std::string, std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>>> minutes;
  for (const auto& m : ctx.ops->throughput(std::chrono::minutes(60))) {
    minutes[m.type][m.minute] = {m.enqueued, m.completed};
  }
  std::map<std::string, nlohmann::json> by_type;
  for (const auto& [type, counts] : minutes) {
    auto& points = by_type[type];
    for (std::int64_t minute = now_minute - 59 * 60; minute <= now_minute; minute += 60) {
      const auto it = counts.find(minute);
      const auto c = it == counts.end() ? std::pair<std::int64_t, std::int64_t>{0, 0} : it->second;
      points.push_back({{"t", std::min(minute + 60, now_s())},
                        {"enqueued", static_cast<double>(c.first) / 60.0},
                        {"completed", static_cast<double>(c.second) / 60.0}});
    }
  }
  nlohmann::json types = nlohmann::json::array();
  for (auto& [type, points] : by_type) types.push_back({{"type", type}, {"points", std::move(points)}});
  out["ops"] = {{"available", true}, {"interval_s", 60}, {"types", std::move(types)}};
  return out;
}

}  // namespace spool::serve::console
