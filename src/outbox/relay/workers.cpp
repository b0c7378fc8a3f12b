// The relay's workers: each takes claimed rows from the queue, publishes
// them, and flushes the delivered ones' records in batches.
#include <algorithm>

#include "common/log.hpp"
#include "outbox/relay/impl.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

std::size_t relay::impl::free_capacity_locked() const {
  // Every lease this relay holds is in flights once, from its claim to its
  // last record (delivered rows awaiting their mark included). Counting the
  // workers and the mark queues instead counted a row deferred by a busy
  // worker twice, so capacity could fall without a claim.
  // Rows asked for by claim rounds still running count as held.
  const std::size_t held = flights.size() + reserved;
  return o.max_in_flight - std::min(o.max_in_flight, held);
}

bool relay::impl::claimable_locked() const {
  // A partial round while others run or rows wait splits the capacity into
  // ever smaller claims, each paying a whole claim's round trips and commit:
  // the relay at 4 workers averaged 64 rows a claim against the library
  // loop's 100 (BENCHMARKS.md). Alone, a partial round keeps the workers fed,
  // unless delivered rows are being or about to be recorded: their record
  // frees capacity within a round trip, while a claim of the few rows free
  // beside them costs a whole claim (with max_in_flight 404 and claims of
  // 100, the CLI relay claimed 75 rows a time on average and recorded 58).
  const std::size_t free = free_capacity_locked();
  if (free == 0) return false;
  if (free >= std::min(claim_batch, o.max_in_flight)) return true;
  return reserved == 0 && tasks.empty() && pending_marks.empty() && flushing == 0;
}

// ---- workers ----
void relay::impl::worker() {
  for (;;) {
    std::shared_ptr<flight> f;
    breaker_state breaker_seen{};
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !tasks.empty() || session_over; });
      if (tasks.empty()) return;
      f = std::move(tasks.front());
      tasks.pop_front();
      ++busy;
      breaker_seen = m.breaker;
    }
    // Whether anything a claimer or end_session waits for changed: a lease
    // ended (capacity, the probe), the breaker moved, or the workers went
    // idle. A delivered row whose record is deferred changes none of them,
    // so the common path wakes nobody (waking every claimer and worker for
    // each row: about 12 % more client CPU at 16 workers, BENCHMARKS.md).
    bool wake = false;
    while (f) {
      std::shared_ptr<flight> next;
      try {
        next = handle(*f);
      } catch (const std::exception& e) {  // containment: nothing escapes a worker
        log().error("outbox relay {}: unexpected error handling {}: {}", owner, f->m.message.id, e.what());
      }
      bool flush = false;
      if (!f->deferred) {
        finish_flight(f);
        wake = true;
      }
      {
        std::lock_guard lock(mu);
        if (f->deferred) pending_marks.push_back(f);
        if (m.breaker != breaker_seen) wake = true;
        // Flush once no queued row waits for a worker (nothing more is
        // about to join this batch) or a claim's worth is pending.
        flush = !pending_marks.empty() && (tasks.empty() || pending_marks.size() >= claim_batch);
      }
      if (flush) flush_marks();
      f = std::move(next);
    }
    {
      std::lock_guard lock(mu);
      if (--busy == 0) wake = true;
    }
    if (wake) cv.notify_all();
  }
}

void relay::impl::finish_flight(const std::shared_ptr<flight>& f) {
  f->ph = done;
  std::lock_guard lock(mu);
  const auto it = flights.find(f->m.message.id);
  if (it != flights.end() && it->second == f) flights.erase(it);
  if (f->probe != 0 && f->probe == probes) probe_out = false;  // not a later probe's
  m.in_flight = static_cast<std::int64_t>(flights.size());
}

}  // namespace spool::outbox
