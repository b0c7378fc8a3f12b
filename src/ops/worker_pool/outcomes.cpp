// An op's outcome recorded with a fresh deadline, retried while the
// database is unavailable or in doubt (a replayed outcome succeeds, §4.5).
#include <algorithm>
#include <thread>

#include "common/log.hpp"
#include "common/text/utf8.hpp"
#include "ops/worker_pool/impl.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::db_backoff;
using spool::detail::log;
using namespace std::chrono_literals;

std::string worker_pool::impl::message(std::string_view text) const {
  return spool::detail::utf8_truncate(text, opts.max_error_bytes);
}

// Runs an outcome call with a fresh deadline (never the shutdown signal),
// retrying unavailable / in_doubt with backoff until outcome_deadline: a
// replay of a recorded outcome succeeds (§4.5), so this is not blind.
void worker_pool::impl::record(flight& f, std::string_view what,
                               const std::function<void(const call_options&)>& call) {
  const op& o = f.claimed;
  const std::lock_guard recording(f.outcome_mutex);
  struct mark_done {
    flight& f;
    ~mark_done() { f.outcome_done = true; }
  } done{f};
  const auto deadline = std::chrono::steady_clock::now() + opts.outcome_deadline;
  db_backoff backoff(std::min<std::chrono::milliseconds>(opts.poll_interval, 100ms), opts.outcome_deadline);
  for (;;) {
    try {
      call(call_options{deadline, {}});
      return;
    } catch (const error& e) {
      if (e.code() == errc::lease_lost) {
        count(o.type, &type_metrics::lease_lost);
        log().warn("ops worker_pool {}: {} of op {} refused, the lease is gone: {}", opts.owner, what, o.id,
                   e.what());
        return;
      }
      const bool again = e.code() == errc::unavailable || e.code() == errc::in_doubt;
      count(o.type, &type_metrics::db_errors);
      const auto wait = backoff.next();
      if (!again || std::chrono::steady_clock::now() + wait >= deadline) {
        log().error(
            "ops worker_pool {}: could not record the {} of op {} ({}); its lease will expire and a "
            "rescuer "
            "will requeue it",
            opts.owner, what, o.id, e.what());
        return;
      }
      log().warn("ops worker_pool {}: {} of op {} failed, retrying: {}", opts.owner, what, o.id, e.what());
      std::this_thread::sleep_for(wait);
    } catch (const std::exception& e) {
      count(o.type, &type_metrics::db_errors);
      log().error("ops worker_pool {}: could not record the {} of op {}: {}", opts.owner, what, o.id,
                  e.what());
      return;
    }
  }
}

}  // namespace spool::ops
