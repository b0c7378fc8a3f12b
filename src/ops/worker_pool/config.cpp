// The worker pool's options and retry policies, checked once.
#include <fmt/format.h>

#include "common/log.hpp"
#include "ops/worker_pool/impl.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::db_backoff;
using spool::detail::log;
using namespace std::chrono_literals;

void require(bool ok, const std::string& message) {
  if (!ok) throw error(errc::invalid_argument, message);
}

worker_pool::impl::impl(queue& q, worker_pool_options o)
    : q(q),
      opts(std::move(o)),
      heartbeat_backoff(opts.poll_interval, opts.max_db_backoff),
      rescue_backoff(opts.poll_interval, opts.max_db_backoff) {
  require(opts.workers >= 1, fmt::format("worker_pool workers must be at least 1, got {}", opts.workers));
  require(opts.poll_interval.count() > 0, "worker_pool poll_interval must be positive");
  require(opts.max_db_backoff.count() > 0, "worker_pool max_db_backoff must be positive");
  require(opts.heartbeat_interval.count() > 0, "worker_pool heartbeat_interval must be positive");
  require(opts.rescue_interval.count() > 0, "worker_pool rescue_interval must be positive");
  require(opts.lease_timeout >= 3 * opts.heartbeat_interval,
          fmt::format("worker_pool lease_timeout ({} ms) must be at least 3 × heartbeat_interval ({} ms)",
                      opts.lease_timeout.count(), opts.heartbeat_interval.count()));
  require(!opts.legacy_orphan_timeout || opts.legacy_orphan_timeout->count() > 0,
          "worker_pool legacy_orphan_timeout must be positive");
  require(opts.outcome_deadline.count() > 0, "worker_pool outcome_deadline must be positive");
  require(opts.shutdown_deadline.count() >= 0 && opts.cancel_grace.count() >= 0,
          "worker_pool shutdown_deadline and cancel_grace must not be negative");
  require(opts.max_error_bytes > 0, "worker_pool max_error_bytes must be positive");
  require(opts.batch >= 1 && opts.batch <= 1000,
          fmt::format("worker_pool batch must be 1 … 1000, got {}", opts.batch));
  require(!opts.on_metrics || opts.metrics_interval.count() > 0,
          "worker_pool metrics_interval must be positive");
  default_retry = {opts.retry_base, opts.retry_multiplier, opts.retry_cap, opts.retry_jitter};
  check_policy(default_retry);
  if (opts.owner.empty()) opts.owner = q.owner();
}

void worker_pool::impl::check_policy(const retry_policy& p) {
  require(p.base.count() >= 0 && p.cap.count() >= 0,
          "worker_pool retry_base and retry_cap must not be negative");
  require(p.multiplier >= 1.0,
          fmt::format("worker_pool retry_multiplier must be at least 1, got {}", p.multiplier));
  require(p.jitter >= 0 && p.jitter < 1,
          fmt::format("worker_pool retry_jitter must be in [0, 1), got {}", p.jitter));
}

}  // namespace spool::ops
