// Delivered rows recorded together, one transaction per batch (outbox.md §7
// rule 7 for each row of it).
#include <algorithm>
#include <thread>

#include "common/log.hpp"
#include "outbox/relay/impl.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

// Records every pending delivered row with mark_delivered_batch, up to
// `claimers` workers at a time (one round trip each); rows deferred
// meanwhile go in the next round.
void relay::impl::flush_marks() {
  std::vector<std::shared_ptr<flight>> batch;
  {
    std::lock_guard lock(mu);
    if (flushing >= claimers || pending_marks.empty()) return;
    ++flushing;
    batch.swap(pending_marks);
  }
  for (;;) {
    for (std::size_t i = 0; i < batch.size(); i += 1000) {  // the store's limit per call
      std::vector<std::shared_ptr<flight>> part(
          batch.begin() + static_cast<std::ptrdiff_t>(i),
          batch.begin() + static_cast<std::ptrdiff_t>(std::min(batch.size(), i + 1000)));
      record_marks(part);
    }
    for (const auto& f : batch) finish_flight(f);
    {
      std::lock_guard lock(mu);
      batch.clear();
      batch.swap(pending_marks);
      if (batch.empty()) --flushing;
    }
    cv.notify_all();  // capacity freed
    if (batch.empty()) return;
  }
}

// One batch of delivered rows recorded: by the sink when it records
// deliveries itself, else mark_delivered_batch.
std::vector<sink::batch_record> relay::impl::record_batch(const std::vector<std::shared_ptr<flight>>& rows,
                                                          const call_options& c) {
  if (sk->records_delivery()) {
    std::vector<const claimed_message*> ms;
    ms.reserve(rows.size());
    for (const auto& f : rows) ms.push_back(&f->m);
    return sk->record_delivered_batch(st, ms, c);
  }
  std::vector<lease_ref> refs;
  refs.reserve(rows.size());
  for (const auto& f : rows) refs.push_back(f->m.ref);
  const auto marked = st.mark_delivered_batch(refs, c);
  std::vector<sink::batch_record> out(marked.size());
  for (std::size_t i = 0; i < marked.size(); ++i) out[i].delivered = marked[i];
  return out;
}

// record_batch under transition_timeout, retried on unavailable;
// an in_doubt attempt is resolved per row by re-reading it (rule 7), as
// run_transition does for one row.
void relay::impl::record_marks(const std::vector<std::shared_ptr<flight>>& rows) {
  std::vector<std::shared_ptr<flight>> todo;
  for (const auto& f : rows) {
    if (!f->lost) todo.push_back(f);  // rule 2: a lost lease's outcome is not recorded
  }
  const auto deadline = steady::now() + o.transition_timeout;
  auto pause = 20ms;
  bool doubt = false;
  const auto delivered_one = [&] {
    with_metrics([](relay_metrics& x) { ++x.delivered; });
    breaker_outcome(outcome_class::delivered);
  };
  while (!todo.empty()) {
    try {
      if (doubt) {
        std::vector<std::shared_ptr<flight>> again;
        for (const auto& f : todo) {
          const lease_fate now = st.check_lease(f->m.ref, call_options{deadline, {}});
          if (now == lease_fate::delivered) {
            delivered_one();
            if (scoped(f->m.message)) {
              std::lock_guard lock(mu);
              successor_ready = true;  // flush_marks notifies
            }
          } else if (now == lease_fate::held) {
            again.push_back(f);  // unchanged and still ours: the attempt did not commit
          } else {
            mark_lost(*f, "mark_delivered");
          }
        }
        store_ok();
        todo.swap(again);
        doubt = false;
        continue;
      }
      const auto marked = record_batch(todo, call_options{deadline, {}});
      store_ok();
      bool ordered = false;
      for (std::size_t i = 0; i < todo.size(); ++i) {
        auto& f = *todo[i];
        if (i < marked.size() && marked[i].delivered) {
          delivered_one();
          ordered = ordered || scoped(f.m.message);
        } else if (i < marked.size() && marked[i].failure) {
          auto part = *marked[i].failure;  // nothing of the row committed: a failure of the row
          if (!detail::valid_failure_code(part.code)) part.code = "sink_failed";
          failed(f,
                 part.kind == outcome_class::permanent ? outcome_class::permanent : outcome_class::transient,
                 part);
        } else {
          mark_lost(f, "mark_delivered");
        }
      }
      if (ordered) {
        std::lock_guard lock(mu);
        successor_ready = true;  // flush_marks notifies
      }
      return;
    } catch (const error& e) {
      store_error("mark_delivered", e);
      // A sink that records row by row may have committed some rows
      // before an unavailable one: re-read them all, as for in_doubt.
      if (e.code() == errc::in_doubt || (e.code() == errc::unavailable && sk->records_delivery()))
        doubt = true;
      if (e.code() != errc::unavailable && e.code() != errc::in_doubt) break;
    } catch (const std::exception& e) {
      store_error("mark_delivered", e);
      break;
    }
    const auto now = steady::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<steady::duration>(pause, deadline - now));
    pause = std::min(pause * 2, 500ms);
  }
  for (const auto& f : todo) {
    with_metrics([](relay_metrics& x) { ++x.delivery_unrecorded; });
    log().error(
        "outbox relay {}: delivery_unrecorded: {} was published but its delivery could not be recorded; "
        "it is delivered again after its lease expires",
        owner, f->m.message.id);
  }
}

}  // namespace spool::outbox
