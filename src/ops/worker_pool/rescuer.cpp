// The rescuer (op-queue.md §5.2): expired leases, and legacy orphans when
// configured, put back to pending.
#include "common/log.hpp"
#include "ops/worker_pool/impl.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::db_backoff;
using spool::detail::log;
using namespace std::chrono_literals;

std::chrono::milliseconds worker_pool::impl::rescue_wait() {
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return std::chrono::milliseconds(
      static_cast<std::int64_t>(static_cast<double>(opts.rescue_interval.count()) * jitter(rescue_rng)));
}

std::optional<std::chrono::milliseconds> worker_pool::impl::rescue_round() {
  auto wait = rescue_wait();
  try {
    auto rescued = q.rescue_expired(opts.lease_timeout);
    if (opts.legacy_orphan_timeout) {
      auto legacy = q.recover_legacy_orphans(*opts.legacy_orphan_timeout);
      rescued.insert(rescued.end(), legacy.begin(), legacy.end());
    }
    rescue_backoff.reset();
    for (const auto& r : rescued) {
      count(r.type, &type_metrics::recovered);
      log().info("ops worker_pool {}: rescued op {} ({}), now {}", opts.owner, r.id, r.type,
                 to_string(r.status));
    }
  } catch (const error& e) {
    if (e.code() == errc::stopped) return std::nullopt;
    db_error("", "rescue", e);
    wait = rescue_backoff.next();
  } catch (const std::exception& e) {
    db_error("", "rescue", e);
    wait = rescue_backoff.next();
  }
  return wait;
}

}  // namespace spool::ops
