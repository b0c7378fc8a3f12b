// The pool's workers and their shared idle polling (op-queue.md §7.2): idle
// workers park while one of them polls, so an idle pool makes at most one
// dequeue per poll_interval.
#include <algorithm>

#include "common/log.hpp"
#include "ops/worker_pool/impl.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::db_backoff;
using spool::detail::log;
using namespace std::chrono_literals;

// Idle workers share polling: one of them (the poller) waits for a wake-up
// or poll_interval and dequeues; the others are parked until a successful
// claim hands them a turn (a ticket) or the poller's role is free. So an
// idle pool makes at most one dequeue per poll_interval, and a burst of
// ready ops wakes the workers one claim at a time.
void worker_pool::impl::work(const std::stop_token& stop) {
  db_backoff backoff(opts.poll_interval, opts.max_db_backoff);
  bool poller = false;  // this worker holds the poller's role
  bool idle = false;    // the last dequeue found nothing
  // Taken before each dequeue, so a change during it is not missed.
  std::uint64_t marker = 0, ready_seen = 0;
  // Each worker, the heartbeats and the rescuer hold a connection at once:
  // open them now, not as the first ops arrive (a connect costs milliseconds).
  (void)q.warm(static_cast<std::size_t>(opts.workers) + 2);
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
    const auto asked = std::chrono::steady_clock::now();  // the lease runs from after this
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
      f->last_heartbeat = asked;
      count(f->claimed.type, &type_metrics::claimed);
      claimed.push_back(std::move(f));
    }
    end_claim(claimed);
    if (failed) {
      (void)spool::detail::sleep_for(backoff.next(), stop);
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
bool worker_pool::impl::wait_for_turn(const std::stop_token& stop, bool& poller) {
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
void worker_pool::impl::claimed_one(bool& poller) {
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

void worker_pool::impl::give_up_poller() {
  {
    std::lock_guard lock(idle_mutex);
    poller_taken = false;
  }
  idle_cv.notify_all();
}

std::uint64_t worker_pool::impl::ready_generation() {
  std::lock_guard lock(idle_mutex);
  return ready_gen;
}

// The poller's wait: a NOTIFY naming one of our types (PostgreSQL with
// notify), else the queue's change marker, or poll_interval as the fallback.
void worker_pool::impl::idle_wait(std::uint64_t marker, std::uint64_t ready_seen,
                                  const std::stop_token& stop) {
  bool woken = false;
  if (by_notify) {
    std::unique_lock lock(idle_mutex);
    woken = idle_cv.wait_for(lock, stop, opts.poll_interval, [&] { return ready_gen != ready_seen; });
  } else {
    try {
      woken = q.wait_for_change(marker, opts.poll_interval, stop) == queue::wake::changed;
    } catch (const std::exception&) {
      (void)spool::detail::sleep_for(opts.poll_interval, stop);
    }
  }
  if (stop.stop_requested()) return;
  std::lock_guard lock(metrics_mutex);
  ++(woken ? wakeups : idle_polls);
}

// On the listener's thread: short.
void worker_pool::impl::on_ready(bool matched) {
  {
    std::lock_guard lock(idle_mutex);
    ++ready_gen;
  }
  idle_cv.notify_all();
  (void)matched;
}

}  // namespace spool::ops
