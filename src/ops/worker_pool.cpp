// The op-queue worker pool (op-queue.md §5, §7).
#include "spool/ops/worker_pool.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "common/log.hpp"
#include "common/utf8.hpp"
#include "runtime/db_backoff.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::db_backoff;
using spool::detail::log;
using namespace std::chrono_literals;

type_metrics pool_metrics::total() const {
  type_metrics t;
  for (const auto& [type, m] : by_type) {
    t.claimed += m.claimed;
    t.succeeded += m.succeeded;
    t.failed += m.failed;
    t.retried += m.retried;
    t.released += m.released;
    t.recovered += m.recovered;
    t.lease_lost += m.lease_lost;
    t.db_errors += m.db_errors;
    t.handler_latency += m.handler_latency;
  }
  return t;
}

namespace {

// One claimed op while its handler runs.
struct flight {
  op claimed;
  std::stop_source stop;
  std::atomic<stop_cause> cause{stop_cause::none};
  std::chrono::steady_clock::time_point last_heartbeat;  // last success (or the claim)
};

struct registration {
  op_handler handler;
  retry_policy retry;
};

void require(bool ok, const std::string& message) {
  if (!ok) throw error(errc::invalid_argument, message);
}

}  // namespace

struct worker_pool::impl {
  impl(queue& q, worker_pool_options o) : q(q), opts(std::move(o)) {
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

  static void check_policy(const retry_policy& p) {
    require(p.base.count() >= 0 && p.cap.count() >= 0,
            "worker_pool retry_base and retry_cap must not be negative");
    require(p.multiplier >= 1.0,
            fmt::format("worker_pool retry_multiplier must be at least 1, got {}", p.multiplier));
    require(p.jitter >= 0 && p.jitter < 1,
            fmt::format("worker_pool retry_jitter must be in [0, 1), got {}", p.jitter));
  }

  // ---- metrics ----
  void count(const std::string& type, std::uint64_t type_metrics::*field, std::uint64_t n = 1) {
    std::lock_guard lock(metrics_mutex);
    counters[type].*field += n;
  }

  void db_error(const std::string& type, std::string_view what, const std::exception& e) {
    count(type, &type_metrics::db_errors);
    log().warn("ops worker_pool {}: {} failed: {}", opts.owner, what, e.what());
  }

  // Waits for d, or until stop is requested. Returns false when stopped.
  bool sleep_for(std::chrono::milliseconds d, const std::stop_token& stop) {
    std::unique_lock lock(sleep_mutex);
    (void)sleep_cv.wait_for(lock, stop, d, [] { return false; });
    return !stop.stop_requested();
  }

  // ---- workers (§7.2) ----
  // Idle workers share polling: one of them (the poller) waits for a wake-up
  // or poll_interval and dequeues; the others are parked until a successful
  // claim hands them a turn (a ticket) or the poller's role is free. So an
  // idle pool makes at most one dequeue per poll_interval, and a burst of
  // ready ops wakes the workers one claim at a time.
  void work() {
    db_backoff backoff(opts.poll_interval, opts.max_db_backoff);
    const auto stop = claim_stop.get_token();
    bool poller = false;  // this worker holds the poller's role
    bool idle = false;    // the last dequeue found nothing
    // Taken before each dequeue, so a change during it is not missed.
    std::uint64_t marker = 0, ready_seen = 0;
    while (!stop.stop_requested()) {
      if (idle && !poller) {
        if (!wait_for_turn(stop, poller)) break;
        // A new poller waits first: its last dequeue just found nothing.
        if (poller) idle_wait(marker, ready_seen, stop);
      }
      {
        std::lock_guard lock(flights_mutex);
        if (stop.stop_requested()) break;
        ++claiming;
      }
      std::vector<op> got;
      bool failed = false;
      try {
        ready_seen = ready_generation();
        marker = q.change_marker();
        {
          std::lock_guard lock(metrics_mutex);
          ++dequeues;
        }
        if (opts.batch == 1) {
          if (auto one = q.dequeue(type_list, opts.owner)) got.push_back(std::move(*one));
        } else {
          got = q.dequeue_batch(opts.batch, type_list, opts.owner);
        }
        backoff.reset();
      } catch (const error& e) {
        failed = true;
        if (e.code() == errc::stopped) {
          end_claim({});
          break;
        }
        db_error("", "dequeue", e);
      } catch (const std::exception& e) {
        failed = true;
        db_error("", "dequeue", e);
      }
      std::vector<std::shared_ptr<flight>> claimed;
      for (auto& o : got) {
        auto f = std::make_shared<flight>();
        f->claimed = std::move(o);
        f->last_heartbeat = std::chrono::steady_clock::now();
        count(f->claimed.type, &type_metrics::claimed);
        claimed.push_back(std::move(f));
      }
      end_claim(claimed);
      if (failed) {
        sleep_for(backoff.next(), stop);
        continue;
      }
      if (!claimed.empty()) {
        idle = false;
        claimed_one(poller);
        run_claimed(claimed, stop);
        continue;
      }
      idle = true;
      if (poller) idle_wait(marker, ready_seen, stop);
    }
    if (poller) give_up_poller();
  }

  // A parked worker waits for a ticket or the free poller's role. False when stopped.
  bool wait_for_turn(const std::stop_token& stop, bool& poller) {
    std::unique_lock lock(idle_mutex);
    ++parked;
    const bool turn = idle_cv.wait(lock, stop, [&] { return tickets > 0 || !poller_taken; });
    --parked;
    if (!turn) return false;
    if (tickets > 0) {
      --tickets;
    } else {
      poller_taken = true;
      poller = true;
    }
    return true;
  }

  // After a claim: the poller's role goes to a parked worker, and one more
  // parked worker gets a turn (there may be more ready ops).
  void claimed_one(bool& poller) {
    {
      std::lock_guard lock(idle_mutex);
      if (poller) {
        poller = false;
        poller_taken = false;
      }
      if (tickets < parked) ++tickets;
    }
    idle_cv.notify_all();
  }

  void give_up_poller() {
    {
      std::lock_guard lock(idle_mutex);
      poller_taken = false;
    }
    idle_cv.notify_all();
  }

  [[nodiscard]] std::uint64_t ready_generation() {
    std::lock_guard lock(idle_mutex);
    return ready_gen;
  }

  // The poller's wait: a NOTIFY naming one of our types (PostgreSQL with
  // notify), else the queue's change marker, or poll_interval as the fallback.
  void idle_wait(std::uint64_t marker, std::uint64_t ready_seen, const std::stop_token& stop) {
    bool woken = false;
    if (by_notify) {
      std::unique_lock lock(idle_mutex);
      woken = idle_cv.wait_for(lock, stop, opts.poll_interval, [&] { return ready_gen != ready_seen; });
    } else {
      try {
        woken = q.wait_for_change(marker, opts.poll_interval, stop) == queue::wake::changed;
      } catch (const std::exception&) {
        sleep_for(opts.poll_interval, stop);
      }
    }
    if (stop.stop_requested()) return;
    std::lock_guard lock(metrics_mutex);
    ++(woken ? wakeups : idle_polls);
  }

  // On the listener's thread: short.
  void on_ready(bool matched) {
    {
      std::lock_guard lock(idle_mutex);
      ++ready_gen;
    }
    idle_cv.notify_all();
    (void)matched;
  }

  void end_claim(const std::vector<std::shared_ptr<flight>>& claimed) {
    std::lock_guard lock(flights_mutex);
    --claiming;
    for (const auto& f : claimed) flights[f->claimed.id] = f;
    flights_cv.notify_all();
  }

  // Runs a claim's ops in turn. With batch > 1 the successful ones are acked
  // together after the last handler (one ack_batch: one round trip, one
  // commit); they stay in flight, heartbeated, until then. Ops not started
  // when stop() begins are released at once.
  void run_claimed(const std::vector<std::shared_ptr<flight>>& claimed, const std::stop_token& stop) {
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
  void ack_together(const std::vector<std::shared_ptr<flight>>& done) {
    std::vector<lease> leases;
    leases.reserve(done.size());
    for (const auto& f : done) leases.push_back({f->claimed.id, std::string(token(f->claimed))});
    std::vector<lease> refused;
    bool recorded = false;
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

  void finish(const std::shared_ptr<flight>& f) {
    std::lock_guard lock(flights_mutex);
    flights.erase(f->claimed.id);
    flights_cv.notify_all();
  }

  // ---- outcomes (§7.3) ----
  // Runs the handler and records its outcome; with ack_later a success is
  // not recorded but returned (true) for the caller's ack_batch.
  bool run(flight& f, bool ack_later) {
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

  static std::string_view token(const op& o) { return o.lease_token ? std::string_view(*o.lease_token) : ""; }
  std::string message(std::string_view text) const {
    return spool::detail::utf8_truncate(text, opts.max_error_bytes);
  }

  // Runs an outcome call with a fresh deadline (never the shutdown signal),
  // retrying unavailable / in_doubt with backoff until outcome_deadline: a
  // replay of a recorded outcome succeeds (§4.5), so this is not blind.
  template <class Call>
  void record(flight& f, std::string_view what, Call&& call) {
    const op& o = f.claimed;
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

  // ---- heartbeats (§5.1) ----
  void heartbeats(const std::stop_token& stop) {
    db_backoff backoff(opts.poll_interval, opts.max_db_backoff);
    auto wait = opts.heartbeat_interval;
    while (sleep_for(wait, stop)) {
      wait = opts.heartbeat_interval;
      std::vector<std::shared_ptr<flight>> live;
      {
        std::lock_guard lock(flights_mutex);
        for (const auto& [id, f] : flights) {
          if (f->cause.load() == stop_cause::none || f->cause.load() == stop_cause::shutdown)
            live.push_back(f);
        }
      }
      if (live.empty()) continue;
      std::vector<lease> leases;
      for (const auto& f : live) leases.push_back({f->claimed.id, std::string(token(f->claimed))});
      try {
        const auto gone = q.heartbeat_batch(leases, call_options::within(opts.heartbeat_interval));
        backoff.reset();
        const auto now = std::chrono::steady_clock::now();
        for (const auto& f : live) {
          const bool lost =
              std::any_of(gone.begin(), gone.end(), [&](const lease& l) { return l.id == f->claimed.id; });
          if (lost && finished(*f)) continue;  // its outcome was recorded after we looked: not a loss
          if (lost) {
            lose(*f, "its heartbeat was refused");
          } else {
            f->last_heartbeat = now;
          }
        }
      } catch (const std::exception& e) {
        db_error("", "heartbeat", e);
        wait = std::min(opts.heartbeat_interval, backoff.next());
        const auto now = std::chrono::steady_clock::now();
        for (const auto& f : live) {
          if (now - f->last_heartbeat >= opts.lease_timeout)
            lose(*f, "no heartbeat succeeded for lease_timeout");
        }
      }
    }
  }

  bool finished(const flight& f) {
    std::lock_guard lock(flights_mutex);
    const auto it = flights.find(f.claimed.id);
    return it == flights.end() || it->second.get() != &f;
  }

  void lose(flight& f, std::string_view why) {
    stop_cause expected = f.cause.load();
    if (expected == stop_cause::lease_lost) return;
    f.cause.store(stop_cause::lease_lost);
    count(f.claimed.type, &type_metrics::lease_lost);
    log().warn("ops worker_pool {}: op {} lost its lease ({}); cancelling its handler", opts.owner,
               f.claimed.id, why);
    f.stop.request_stop();
  }

  // ---- rescuer (§5.2) ----
  void rescue(const std::stop_token& stop) {
    db_backoff backoff(opts.poll_interval, opts.max_db_backoff);
    std::mt19937_64 local(std::random_device{}());
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    auto wait = std::chrono::milliseconds(
        static_cast<std::int64_t>(static_cast<double>(opts.rescue_interval.count()) * jitter(local)));
    while (sleep_for(wait, stop)) {
      wait = std::chrono::milliseconds(
          static_cast<std::int64_t>(static_cast<double>(opts.rescue_interval.count()) * jitter(local)));
      try {
        auto rescued = q.rescue_expired(opts.lease_timeout);
        if (opts.legacy_orphan_timeout) {
          auto legacy = q.recover_legacy_orphans(*opts.legacy_orphan_timeout);
          rescued.insert(rescued.end(), legacy.begin(), legacy.end());
        }
        backoff.reset();
        for (const auto& r : rescued) {
          count(r.type, &type_metrics::recovered);
          log().info("ops worker_pool {}: rescued op {} ({}), now {}", opts.owner, r.id, r.type,
                     to_string(r.status));
        }
      } catch (const error& e) {
        if (e.code() == errc::stopped) return;
        db_error("", "rescue", e);
        wait = backoff.next();
      } catch (const std::exception& e) {
        db_error("", "rescue", e);
        wait = backoff.next();
      }
    }
  }

  // ---- lifecycle ----
  void start() {
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
    heartbeater = std::jthread([this](const std::stop_token& st) { heartbeats(st); });
    if (opts.rescuer) rescuer = std::jthread([this](const std::stop_token& st) { rescue(st); });
    if (opts.on_metrics) reporter = std::jthread([this](const std::stop_token& st) { report_metrics(st); });
    for (int i = 0; i < opts.workers; ++i) workers.emplace_back([this] { work(); });
  }

  stop_report stop(std::chrono::milliseconds deadline) {
    std::lock_guard lock(lifecycle);
    if (stopped) return report;
    stopped = true;
    if (!started) return report;
    // 1. Stop claiming at once (and rescuing: this pool is leaving).
    claim_stop.request_stop();
    if (rescuer.joinable()) {
      rescuer.request_stop();
      rescuer.join();
    }
    std::unique_lock fl(flights_mutex);
    auto idle = [&] { return claiming == 0 && flights.empty(); };
    // 2. Let running handlers finish until the deadline.
    if (!flights_cv.wait_for(fl, deadline, idle)) {
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
    heartbeater.request_stop();
    if (heartbeater.joinable()) heartbeater.join();
    if (report.still_running.empty()) {
      for (auto& w : workers) w.join();
      workers.clear();
    } else {
      log().error("ops worker_pool {}: {} handler(s) still running after shutdown cancellation: {}",
                  opts.owner, report.still_running.size(), fmt::join(report.still_running, ", "));
    }
    subscription.reset();  // no more callbacks into this pool
    if (reporter.joinable()) {
      reporter.request_stop();
      reporter.join();
      exported();  // the final figures
    }
    return report;
  }

  pool_metrics snapshot() const {
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

  void exported() {
    try {
      opts.on_metrics(snapshot());
    } catch (const std::exception& e) {
      log().warn("ops worker_pool {}: the metrics callback threw: {}", opts.owner, e.what());
    }
  }

  void report_metrics(const std::stop_token& stop) {
    while (sleep_for(opts.metrics_interval, stop)) exported();
  }

  queue& q;
  worker_pool_options opts;
  retry_policy default_retry;
  std::map<std::string, registration> handlers;
  std::vector<std::string> type_list;

  std::mutex lifecycle;
  bool started = false, stopped = false;
  stop_report report;

  std::stop_source claim_stop;
  mutable std::mutex flights_mutex;
  std::condition_variable flights_cv;
  std::map<std::string, std::shared_ptr<flight>> flights;
  int claiming = 0;

  std::mutex sleep_mutex;
  std::condition_variable_any sleep_cv;

  // Shared idle polling (§7.2).
  std::mutex idle_mutex;
  std::condition_variable_any idle_cv;
  int parked = 0;               // workers waiting for a turn
  int tickets = 0;              // turns handed out by successful claims, ≤ parked
  bool poller_taken = false;    // one idle worker polls
  bool by_notify = false;       // set before the workers start
  std::uint64_t ready_gen = 0;  // NOTIFYs naming our types and "look now" events

  mutable std::mutex metrics_mutex;
  std::map<std::string, type_metrics> counters;
  std::uint64_t wakeups = 0, idle_polls = 0, dequeues = 0;

  std::mutex rng_mutex;
  std::mt19937_64 rng{std::random_device{}()};

  std::vector<std::thread> workers;
  std::jthread heartbeater, rescuer, reporter;
  // Last: destroyed first, so no listener callback outlives the members above.
  std::shared_ptr<void> subscription;
};

worker_pool::worker_pool(queue& q, worker_pool_options options)
    : impl_(std::make_unique<impl>(q, std::move(options))) {}

worker_pool::~worker_pool() {
  try {
    (void)stop();
  } catch (const std::exception& e) {
    log().error("ops worker_pool: stop in the destructor failed: {}", e.what());
  }
  for (auto& w : impl_->workers) {
    if (w.joinable()) w.join();
  }
}

void worker_pool::add_handler(const std::string& type, op_handler handler, handler_options options) {
  if (type.empty()) throw error(errc::invalid_argument, "worker_pool handler type must not be empty");
  if (!handler)
    throw error(errc::invalid_argument, fmt::format("worker_pool handler for type {} is empty", type));
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->started || impl_->stopped) {
    throw error(errc::invalid_state, fmt::format("worker_pool add_handler({}) after start", type));
  }
  const retry_policy policy = options.retry.value_or(impl_->default_retry);
  impl::check_policy(policy);
  impl_->handlers[type] = registration{std::move(handler), policy};
}

void worker_pool::start() { impl_->start(); }

stop_report worker_pool::stop(std::optional<std::chrono::milliseconds> deadline) {
  return impl_->stop(deadline.value_or(impl_->opts.shutdown_deadline));
}

pool_metrics worker_pool::metrics() const { return impl_->snapshot(); }

const std::string& worker_pool::owner() const noexcept { return impl_->opts.owner; }

std::vector<std::string> worker_pool::types() const {
  std::lock_guard lock(impl_->lifecycle);
  std::vector<std::string> out;
  for (const auto& [type, r] : impl_->handlers) out.push_back(type);
  return out;
}

}  // namespace spool::ops
