// The console's overview: every mq queue's counts, the op queue's and the
// outbox's, each with the age of its oldest waiting work, read now.
#include <chrono>

#include "serve/console/api.hpp"
#include "spool/error.hpp"
#include "spool/mq/browser.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/store.hpp"

namespace spool::serve::console {

namespace {

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

nlohmann::json overview(api_context& ctx) {
  const auto now = now_s();
  nlohmann::json queues = nlohmann::json::array();
  for (const auto& q : ctx.mq->queues()) {
    queues.push_back(
        {{"queue", q.queue},
         {"visible", q.visible},
         {"in_flight", q.in_flight},
         {"delayed", q.delayed},
         {"quarantined", q.quarantined},
         {"oldest_age_s", q.oldest_waiting_created_at
                              ? nlohmann::json(std::max<std::int64_t>(0, now - *q.oldest_waiting_created_at))
                              : nlohmann::json(nullptr)}});
  }
  nlohmann::json out{{"engine", std::string(engine_name(ctx.db.kind()))}, {"mq", {{"queues", queues}}}};
  if (ctx.ops) {
    const auto s = ctx.ops->stats();
    out["ops"] = {{"available", true},       {"table", ctx.ops->table()}, {"pending", s.pending},
                  {"running", s.running},    {"failed", s.failed},        {"done_24h", s.done_24h},
                  {"cancelled", s.cancelled}};
  } else {
    out["ops"] = {{"available", false}, {"why", ctx.ops_missing}};
  }
  if (ctx.outbox) {
    const auto b = ctx.outbox->backlog();
    out["outbox"] = {
        {"available", true},
        {"pending", b.pending},
        {"leased", b.leased},
        {"expired_leases", b.expired_leases},
        {"dead", b.dead},
        {"oldest_pending_age_s", b.oldest_pending_created_at
                                     ? nlohmann::json(static_cast<double>(b.oldest_pending_age.count()) / 1e6)
                                     : nlohmann::json(nullptr)}};
  } else {
    out["outbox"] = {{"available", false}, {"why", ctx.outbox_missing}};
  }
  return out;
}

}  // namespace spool::serve::console
