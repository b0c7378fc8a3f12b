// Claimed ops run through their handlers, and their outcomes decided
// (op-queue.md §7.3).
#include <fmt/format.h>

#include <algorithm>

#include "common/log.hpp"
#include "common/text/utf8.hpp"
#include "ops/worker_pool/impl.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::db_backoff;
using spool::detail::log;
using namespace std::chrono_literals;

void worker_pool::impl::end_claim(const std::vector<std::shared_ptr<flight>>& claimed) {
  std::lock_guard lock(flights_mutex);
  --claiming;
  for (const auto& f : claimed) flights[f->claimed.id] = f;
  flights_cv.notify_all();
}

// Runs a claim's ops in turn. With batch > 1 the successful ones are acked
// together after the last handler (one ack_batch: one round trip, one
// commit); they stay in flight, heartbeated, until then. Ops not started
// when stop() begins are released at once.
void worker_pool::impl::run_claimed(const std::vector<std::shared_ptr<flight>>& claimed,
                                    const std::stop_token& stop) {
  std::vector<std::shared_ptr<flight>> to_ack;
  for (const auto& f : claimed) {
    if (stop.stop_requested()) {  // stop() began: do not start it
      record(*f, "release", [&](const call_options& c) {
        q.release(f->claimed.id, token(f->claimed), "released unstarted: the pool is stopping", c);
        count(f->claimed.type, &type_metrics::released);
      });
      finish(f);
      continue;
    }
    if (run(*f, opts.batch > 1)) {
      to_ack.push_back(f);
    } else {
      finish(f);
    }
  }
  if (!to_ack.empty()) ack_together(to_ack);
  for (const auto& f : to_ack) finish(f);
}

// One ack_batch for the ops whose handlers succeeded; a lease refused in it
// (lost, or the op no longer running) is counted as ack would have thrown.
void worker_pool::impl::ack_together(const std::vector<std::shared_ptr<flight>>& done) {
  std::vector<lease> leases;
  leases.reserve(done.size());
  for (const auto& f : done) leases.push_back({f->claimed.id, std::string(token(f->claimed))});
  std::vector<lease> refused;
  bool recorded = false;
  // Every op of the batch is being recorded (record() holds the first's lock itself).
  std::vector<std::unique_lock<std::mutex>> recording;
  for (std::size_t i = 1; i < done.size(); ++i) recording.emplace_back(done[i]->outcome_mutex);
  struct mark_done {
    const std::vector<std::shared_ptr<flight>>& all;
    ~mark_done() {
      for (std::size_t i = 1; i < all.size(); ++i) all[i]->outcome_done = true;
    }
  } marked{done};
  record(*done.front(), "ack (batch)", [&](const call_options& c) {
    refused = q.ack_batch(leases, c);
    recorded = true;
  });
  if (!recorded) return;  // logged by record: the leases expire and a rescuer requeues the ops
  for (const auto& f : done) {
    const bool lost =
        std::any_of(refused.begin(), refused.end(), [&](const lease& l) { return l.id == f->claimed.id; });
    if (lost) {
      count(f->claimed.type, &type_metrics::lease_lost);
      log().warn("ops worker_pool {}: ack of op {} refused, the lease is gone", opts.owner, f->claimed.id);
    } else {
      count(f->claimed.type, &type_metrics::succeeded);
    }
  }
}

void worker_pool::impl::finish(const std::shared_ptr<flight>& f) {
  std::lock_guard lock(flights_mutex);
  flights.erase(f->claimed.id);
  flights_cv.notify_all();
}

// Runs the handler and records its outcome; with ack_later a success is
// not recorded but returned (true) for the caller's ack_batch.
bool worker_pool::impl::run(flight& f, bool ack_later) {
  const op& o = f.claimed;
  const std::string& id = o.id;
  if (o.defect) {
    record(f, "fail (defect)", [&](const call_options& c) {
      q.fail(id, token(o), message(*o.defect), false, c);
      count(o.type, &type_metrics::failed);
    });
    return false;
  }
  auto reg = handlers.find(o.type);
  if (reg == handlers.end()) {  // cannot happen: only registered types are claimed
    record(f, "release", [&](const call_options& c) {
      q.release(id, token(o), "no handler for this type", c);
      count(o.type, &type_metrics::released);
    });
    return false;
  }
  handler_context ctx(f.stop.get_token(), &f.cause);
  enum class result { ok, permanent, later, error } r = result::ok;
  std::string why;
  std::optional<retry_later> later;
  const auto started_at = std::chrono::steady_clock::now();
  try {
    reg->second.handler(o, ctx);
  } catch (const permanent_error& e) {
    r = result::permanent;
    why = e.what();
  } catch (const retry_later& e) {
    r = result::later;
    why = e.what();
    later.emplace(e);
  } catch (const std::exception& e) {
    r = result::error;
    why = e.what();
  } catch (...) {
    r = result::error;
    why = "unknown exception";
  }
  {
    std::lock_guard lock(metrics_mutex);
    counters[o.type].handler_latency.observe(std::chrono::steady_clock::now() - started_at);
  }
  const stop_cause cause = f.cause.load();
  if (cause == stop_cause::lease_lost) {
    log().warn("ops worker_pool {}: op {} lost its lease while running; nothing recorded", opts.owner, id);
    return false;  // counted when the loss was detected
  }
  if (r == result::ok) {
    if (ack_later) return true;
    record(f, "ack", [&](const call_options& c) {
      q.ack(id, token(o), c);
      count(o.type, &type_metrics::succeeded);
    });
    return false;
  }
  if (cause == stop_cause::shutdown) {
    record(f, "release", [&](const call_options& c) {
      q.release(id, token(o), message("interrupted by shutdown: " + why), c);
      count(o.type, &type_metrics::released);
    });
    return false;
  }
  if (r == result::permanent) {
    record(f, "fail", [&](const call_options& c) {
      q.fail(id, token(o), message(why), false, c);
      count(o.type, &type_metrics::failed);
    });
    return false;
  }
  std::chrono::microseconds delay{0};
  std::optional<time_point> at;
  if (later && later->at()) {
    at = *later->at();
  } else if (later) {
    delay = *later->delay();
  } else {
    double u = 0.5;
    {
      std::lock_guard lock(rng_mutex);
      u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    }
    delay = backoff_delay(o.attempts, reg->second.retry, u);
  }
  record(f, "fail", [&](const call_options& c) {
    const op_status s =
        at ? q.fail(id, token(o), message(why), *at, c) : q.fail(id, token(o), message(why), delay, c);
    count(o.type, s == op_status::failed ? &type_metrics::failed : &type_metrics::retried);
  });
  return false;
}

}  // namespace spool::ops
