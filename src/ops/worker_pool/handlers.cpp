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
// when stop() begins are released at once. Consecutive ops of a type with a
// batch handler go to it in one call.
void worker_pool::impl::run_claimed(const std::vector<std::shared_ptr<flight>>& claimed,
                                    const std::stop_token& stop) {
  std::vector<std::shared_ptr<flight>> to_ack;
  for (std::size_t i = 0; i < claimed.size();) {
    const auto& f = claimed[i];
    if (stop.stop_requested()) {  // stop() began: do not start it
      record(*f, "release", [&](const call_options& c) {
        q.release(f->claimed.id, token(f->claimed), "released unstarted: the pool is stopping", c);
        count(f->claimed.type, &type_metrics::released);
      });
      finish(f);
      ++i;
      continue;
    }
    const auto reg = handlers.find(f->claimed.type);
    if (reg != handlers.end() && reg->second.batch && !f->claimed.defect) {
      std::vector<std::shared_ptr<flight>> group;
      for (; i < claimed.size() && claimed[i]->claimed.type == f->claimed.type && !claimed[i]->claimed.defect;
           ++i)
        group.push_back(claimed[i]);
      for (auto& done : run_batch(group, reg->second)) to_ack.push_back(std::move(done));
      continue;
    }
    if (run(*f, opts.batch > 1)) {
      to_ack.push_back(f);
    } else {
      finish(f);
    }
    ++i;
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

handler_outcome worker_pool::impl::invoke(const std::string& type, const std::function<void()>& call) {
  handler_outcome out;
  const auto started_at = std::chrono::steady_clock::now();
  try {
    call();
  } catch (const permanent_error& e) {
    out.r = handler_outcome::result::permanent;
    out.why = e.what();
  } catch (const retry_later& e) {
    out.r = handler_outcome::result::later;
    out.why = e.what();
    out.later.emplace(e);
  } catch (const std::exception& e) {
    out.r = handler_outcome::result::error;
    out.why = e.what();
  } catch (...) {
    out.r = handler_outcome::result::error;
    out.why = "unknown exception";
  }
  std::lock_guard lock(metrics_mutex);
  counters[type].handler_latency.observe(std::chrono::steady_clock::now() - started_at);
  return out;
}

// Runs the handler and records its outcome; with ack_later a success is
// not recorded but returned (true) for the caller's ack_batch.
bool worker_pool::impl::run(flight& f, bool ack_later) {
  const op& o = f.claimed;
  if (o.defect) {
    record(f, "fail (defect)", [&](const call_options& c) {
      q.fail(o.id, token(o), message(*o.defect), false, c);
      count(o.type, &type_metrics::failed);
    });
    return false;
  }
  auto reg = handlers.find(o.type);
  if (reg == handlers.end()) {  // cannot happen: only registered types are claimed
    record(f, "release", [&](const call_options& c) {
      q.release(o.id, token(o), "no handler for this type", c);
      count(o.type, &type_metrics::released);
    });
    return false;
  }
  handler_context ctx(f.stop.get_token(), &f.cause);
  const auto out = invoke(o.type, [&] { reg->second.handler(o, ctx); });
  return settle(f, out, reg->second, ack_later);
}

namespace {
// A batch call's cancellation: it stops when any of its ops does, with the
// first such op's cause.
struct batch_stop {
  std::stop_source source;
  std::atomic<stop_cause> cause{stop_cause::none};
};

// Passes one op's cancellation on to its batch.
struct forward_stop {
  batch_stop* batch;
  const std::atomic<stop_cause>* cause;
  void operator()() const noexcept {
    stop_cause expected = stop_cause::none;
    (void)batch->cause.compare_exchange_strong(expected, cause->load());
    batch->source.request_stop();
  }
};
}  // namespace

std::vector<std::shared_ptr<flight>> worker_pool::impl::run_batch(
    const std::vector<std::shared_ptr<flight>>& group, const registration& reg) {
  // On the heap: GCC 12 warns (falsely) of std::stop_source's constructor on the stack.
  const auto batch = std::make_unique<batch_stop>();
  std::vector<op> ops;
  ops.reserve(group.size());
  handler_outcome out;
  {
    std::vector<std::unique_ptr<std::stop_callback<forward_stop>>> links;
    links.reserve(group.size());
    for (const auto& f : group) {
      links.push_back(std::make_unique<std::stop_callback<forward_stop>>(
          f->stop.get_token(), forward_stop{batch.get(), &f->cause}));
      ops.push_back(f->claimed);
    }
    handler_context ctx(batch->source.get_token(), &batch->cause);
    out = invoke(group.front()->claimed.type, [&] { reg.batch(std::span<const op>(ops), ctx); });
  }  // the links end before the outcomes: a lease lost from here on is the ack's to find
  std::vector<std::shared_ptr<flight>> to_ack;
  for (const auto& f : group) {
    if (settle(*f, out, reg, true)) {
      to_ack.push_back(f);
    } else {
      finish(f);
    }
  }
  return to_ack;
}

bool worker_pool::impl::settle(flight& f, const handler_outcome& out, const registration& reg,
                               bool ack_later) {
  using result = handler_outcome::result;
  const op& o = f.claimed;
  const std::string& id = o.id;
  const stop_cause cause = f.cause.load();
  if (cause == stop_cause::lease_lost) {
    log().warn("ops worker_pool {}: op {} lost its lease while running; nothing recorded", opts.owner, id);
    return false;  // counted when the loss was detected
  }
  if (out.r == result::ok) {
    if (ack_later) return true;
    record(f, "ack", [&](const call_options& c) {
      q.ack(id, token(o), c);
      count(o.type, &type_metrics::succeeded);
    });
    return false;
  }
  if (cause == stop_cause::shutdown) {
    record(f, "release", [&](const call_options& c) {
      q.release(id, token(o), message("interrupted by shutdown: " + out.why), c);
      count(o.type, &type_metrics::released);
    });
    return false;
  }
  if (out.r == result::permanent) {
    record(f, "fail", [&](const call_options& c) {
      q.fail(id, token(o), message(out.why), false, c);
      count(o.type, &type_metrics::failed);
    });
    return false;
  }
  std::chrono::microseconds delay{0};
  std::optional<time_point> at;
  if (out.later && out.later->at()) {
    at = *out.later->at();
  } else if (out.later) {
    delay = *out.later->delay();
  } else {
    double u = 0.5;
    {
      std::lock_guard lock(rng_mutex);
      u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    }
    delay = backoff_delay(o.attempts, reg.retry, u);
  }
  record(f, "fail", [&](const call_options& c) {
    const op_status s = at ? q.fail(id, token(o), message(out.why), *at, c)
                           : q.fail(id, token(o), message(out.why), delay, c);
    count(o.type, s == op_status::failed ? &type_metrics::failed : &type_metrics::retried);
  });
  return false;
}

}  // namespace spool::ops
