// Heartbeats (op-queue.md §5.1): every live lease renewed each
// heartbeat_interval; a refused or long-failing one cancels its handler.
#include <algorithm>

#include "common/log.hpp"
#include "ops/worker_pool/impl.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::db_backoff;
using spool::detail::log;
using namespace std::chrono_literals;

std::chrono::milliseconds worker_pool::impl::heartbeat_round() {
  std::vector<std::shared_ptr<flight>> live;
  {
    std::lock_guard lock(flights_mutex);
    for (const auto& [id, f] : flights) {
      if (f->cause.load() == stop_cause::none || f->cause.load() == stop_cause::shutdown) live.push_back(f);
    }
  }
  if (live.empty()) return opts.heartbeat_interval;
  std::vector<lease> leases;
  for (const auto& f : live) leases.push_back({f->claimed.id, std::string(token(f->claimed))});
  const auto sent = std::chrono::steady_clock::now();
  try {
    const auto gone = q.heartbeat_batch(leases, call_options::within(opts.heartbeat_interval));
    heartbeat_backoff.reset();
    for (const auto& f : live) {
      const bool lost =
          std::any_of(gone.begin(), gone.end(), [&](const lease& l) { return l.id == f->claimed.id; });
      if (lost && finished(*f)) continue;  // its outcome was recorded after we looked: not a loss
      if (lost) {
        // The refusal may be the outcome committing meanwhile: wait for a recording under way.
        const std::lock_guard recorded(f->outcome_mutex);
        if (f->outcome_done) continue;
        lose(*f, "its heartbeat was refused");
      } else {
        f->last_heartbeat = sent;  // the server renewed the lease after this
      }
    }
    return opts.heartbeat_interval;
  } catch (const std::exception& e) {
    db_error("", "heartbeat", e);
    (void)fence_round();
    return std::min(opts.heartbeat_interval, heartbeat_backoff.next());
  }
}

std::optional<std::chrono::milliseconds> worker_pool::impl::fence_round() {
  // A heartbeat interval of margin: the lease's last third at least
  // (lease_timeout ≥ 3 × heartbeat_interval) for the handler to stop.
  const auto fence_after = opts.lease_timeout - opts.heartbeat_interval;
  std::vector<std::shared_ptr<flight>> live;
  {
    std::lock_guard lock(flights_mutex);
    for (const auto& [id, f] : flights) {
      if (f->cause.load() == stop_cause::none || f->cause.load() == stop_cause::shutdown) live.push_back(f);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  auto next = opts.heartbeat_interval;
  for (const auto& f : live) {
    const auto age = now - f->last_heartbeat.load();
    if (age >= fence_after) {
      const std::lock_guard recorded(f->outcome_mutex);
      if (!f->outcome_done) lose(*f, "no heartbeat got through in time: its lease could expire");
    } else {
      next = std::min(next, std::chrono::ceil<std::chrono::milliseconds>(fence_after - age));
    }
  }
  return std::max(next, std::chrono::milliseconds(1));
}

bool worker_pool::impl::finished(const flight& f) {
  std::lock_guard lock(flights_mutex);
  const auto it = flights.find(f.claimed.id);
  return it == flights.end() || it->second.get() != &f;
}

void worker_pool::impl::lose(flight& f, std::string_view why) {
  stop_cause expected = f.cause.load();
  if (expected == stop_cause::lease_lost) return;
  f.cause.store(stop_cause::lease_lost);
  count(f.claimed.type, &type_metrics::lease_lost);
  log().warn("ops worker_pool {}: op {} lost its lease ({}); cancelling its handler", opts.owner,
             f.claimed.id, why);
  f.stop.request_stop();
}

}  // namespace spool::ops
