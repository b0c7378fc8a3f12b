// The pool's start and graceful stop (op-queue.md §7.4), and its metrics.
#include <fmt/format.h>

#include <algorithm>

#include "common/log.hpp"
#include "ops/worker_pool/impl.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::db_backoff;
using spool::detail::log;
using namespace std::chrono_literals;

void worker_pool::impl::count(const std::string& type, std::uint64_t type_metrics::*field, std::uint64_t n) {
  std::lock_guard lock(metrics_mutex);
  counters[type].*field += n;
}

void worker_pool::impl::db_error(const std::string& type, std::string_view what, const std::exception& e) {
  count(type, &type_metrics::db_errors);
  log().warn("ops worker_pool {}: {} failed: {}", opts.owner, what, e.what());
}

void worker_pool::impl::start() {
  std::lock_guard lock(lifecycle);
  if (started || stopped) throw error(errc::invalid_state, "worker_pool already started or stopped");
  if (handlers.empty())
    throw error(errc::invalid_state, "worker_pool has no handler: register one before start()");
  started = true;
  type_list.clear();
  for (const auto& [type, r] : handlers) type_list.push_back(type);  // std::map: sorted
  {
    std::lock_guard m(metrics_mutex);
    for (const auto& t : type_list) counters[t];
  }
  subscription = q.subscribe_ready(type_list, [this](bool matched) { on_ready(matched); });
  by_notify = subscription != nullptr;
  heartbeater.start(opts.heartbeat_interval,
                    [this](const std::stop_token&) { return std::optional(heartbeat_round()); });
  fencer.start(opts.heartbeat_interval, [this](const std::stop_token&) { return fence_round(); });
  if (opts.rescuer) rescuer.start(rescue_wait(), [this](const std::stop_token&) { return rescue_round(); });
  if (opts.on_metrics) {
    reporter.start(opts.metrics_interval, [this](const std::stop_token&) {
      exported();
      return std::optional(opts.metrics_interval);
    });
  }
  workers.start(static_cast<std::size_t>(opts.workers), [this](const std::stop_token& stop) { work(stop); });
}

stop_report worker_pool::impl::stop(std::chrono::milliseconds deadline) {
  std::lock_guard lock(lifecycle);
  if (stopped) return report;
  stopped = true;
  if (!started) return report;
  // 1. Stop claiming at once (and rescuing: this pool is leaving).
  workers.request_stop();
  rescuer.stop();
  std::unique_lock fl(flights_mutex);
  auto idle = [&] { return claiming == 0 && flights.empty(); };
  // 2. Let running handlers finish until the deadline.
  if (!flights_cv.wait_for(fl, deadline, idle)) {
    // A claim still in flight could take the op a cancelled handler is about
    // to release, and release it again as unstarted, over the shutdown
    // reason. Claims are single statements: let them end first (no new one
    // starts once stop is requested; bounded by cancel_grace).
    flights_cv.wait_for(fl, opts.cancel_grace, [&] { return claiming == 0; });
    // 3. Then request cancellation and wait cancel_grace more.
    for (const auto& [id, f] : flights) {
      stop_cause none = stop_cause::none;
      if (f->cause.compare_exchange_strong(none, stop_cause::shutdown)) f->stop.request_stop();
    }
    flights_cv.wait_for(fl, opts.cancel_grace, idle);
  }
  for (const auto& [id, f] : flights) report.still_running.push_back(id);
  fl.unlock();
  // Heartbeats stop: the leases of handlers still running expire.
  heartbeater.stop();
  fencer.stop();
  if (report.still_running.empty()) {
    workers.join();
  } else {
    log().error("ops worker_pool {}: {} handler(s) still running after shutdown cancellation: {}", opts.owner,
                report.still_running.size(), fmt::join(report.still_running, ", "));
  }
  subscription.reset();  // no more callbacks into this pool
  if (opts.on_metrics) {
    reporter.stop();
    exported();  // the final figures
  }
  return report;
}

pool_metrics worker_pool::impl::snapshot() const {
  pool_metrics m;
  {
    std::lock_guard lock(metrics_mutex);
    m.by_type = counters;
    m.wakeups = wakeups;
    m.idle_polls = idle_polls;
    m.dequeues = dequeues;
  }
  std::lock_guard lock(flights_mutex);
  m.in_flight = static_cast<std::int64_t>(flights.size());
  return m;
}

void worker_pool::impl::exported() {
  try {
    opts.on_metrics(snapshot());
  } catch (const std::exception& e) {
    log().warn("ops worker_pool {}: the metrics callback threw: {}", opts.owner, e.what());
  }
}

}  // namespace spool::ops
