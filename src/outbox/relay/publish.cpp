// One row published through the sink and its outcome recorded (outbox.md §7
// rules 2, 3, 9, 10).
#include "outbox/relay/impl.hpp"

#include <fmt/format.h>

#include "common/log.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

bool relay::impl::scoped(const envelope& e) const {
  return o.mode == serialization::by_topic ||
         (o.mode == serialization::by_ordering_key && !e.ordering_key.empty());
}

std::shared_ptr<flight> relay::impl::make_flight(claimed_message cm, steady::time_point asked_at) {
  auto f = std::make_shared<flight>();
  f->m = std::move(cm);
  f->deadline = (asked_at + o.lease_duration).time_since_epoch().count();
  return f;
}

// Moves a row out of publishing; false when shutdown abandoned it.
bool relay::impl::take(flight& f) {
  int expected = publishing;
  return f.ph.compare_exchange_strong(expected, transition);
}

// Publishes one row and records its outcome. Returns the scope's next row
// when claim-next leased one (rule 9).
std::shared_ptr<flight> relay::impl::handle(flight& f) {
  const auto& cm = f.m;
  if (!take(f)) return nullptr;  // abandoned at shutdown
  if (f.lost) return nullptr;    // lost while queued for a worker: another relay may hold it
  if (cm.message.claim_count > o.max_claims) {
    dead_letter(f, {"claim_budget_exhausted", fmt::format("claimed {} times, over max_claims {}",
                                                          cm.message.claim_count, o.max_claims)});
    return nullptr;
  }
  if (stopping) {  // shutdown began before the sink was called
    release(f);
    return nullptr;
  }
  // Self-fencing (fence_round): a lease within one renew_interval of its
  // deadline is not published on; its row goes to whoever claims it next.
  if (f.deadline.load() - std::chrono::duration_cast<steady::duration>(renew).count() <=
      steady::now().time_since_epoch().count()) {
    mark_lost(f, "no renewal got through in time: its lease could expire");
    return nullptr;
  }
  f.ph = publishing;  // the sink call may now be abandoned at shutdown
  sink_outcome out;
  const auto started = steady::now();
  try {
    out = sk->publish(cm, f.stop.get_token());
  } catch (const std::exception& e) {
    out = sink_outcome::transient("sink_threw", e.what());
  } catch (...) {
    out = sink_outcome::transient("sink_threw", "the sink threw");
  }
  const auto elapsed = steady::now() - started;
  with_metrics([&](relay_metrics& x) { x.sink_latency.observe(elapsed); });
  if (!take(f)) return nullptr;  // abandoned at shutdown
  if (f.lost) return nullptr;    // rule 2: the outcome of a lost lease is not recorded
  const auto c = classify(cm, out);
  {
    std::lock_guard lock(mu);
    h.sink_ok = c != outcome_class::transient;
    if (c == outcome_class::transient) h.last_sink_error = out.code;
  }
  if (c == outcome_class::delivered) return delivered(f);
  failed(f, c, out);
  return nullptr;
}

// Records a permanent or transient failure (rule 3, 10).
void relay::impl::failed(flight& f, outcome_class c, const sink_outcome& out) {
  const auto& cm = f.m;
  if (c == outcome_class::permanent) {
    dead_letter(f, {out.code, out.message});
    return;
  }
  if (stopping) {  // rule 10: a stop-induced failure consumes no attempt
    release(f);
    return;
  }
  breaker_outcome(outcome_class::transient);
  const std::uint32_t n = cm.message.failure_count + 1;
  if (n >= o.max_attempts) {
    dead_letter(f, {out.code, out.message});
    return;
  }
  const auto delay = retry_delay(n, out);
  if (run_transition(f, "retry", lease_fate::pending, [&](const call_options& co) {
        st.retry(cm.ref, retry_at::after(delay), {out.code, out.message}, co);
      }) == recorded::ok) {
    with_metrics([](relay_metrics& x) { ++x.retried; });
  }
}

std::shared_ptr<flight> relay::impl::delivered(flight& f) {
  const auto& cm = f.m;
  std::optional<claimed_message> next;
  recorded r;
  sink_outcome sink_part;
  if (scoped(cm.message) && !sk->records_delivery() && !stopping) {
    const auto asked = steady::now();
    r = run_transition(f, "mark_delivered_and_claim_next", lease_fate::delivered, [&](const call_options& c) {
      next = st.mark_delivered_and_claim_next(cm.ref, o.lease_duration, o.mode, c);
    });
    if (r == recorded::ok && next) {
      auto nf = make_flight(std::move(*next), asked);
      std::lock_guard lock(mu);
      ++m.claimed;
      ++m.delivered;
      flights[nf->m.message.id] = nf;
      m.in_flight = static_cast<std::int64_t>(flights.size());
      breaker_after_delivery_locked();
      return nf;
    }
  } else if (!stopping && (sk->records_delivery() || !scoped(cm.message))) {
    // The worker queues it for the next batch: mark_delivered_batch, or
    // the sink's record_delivered_batch (its writes in the same
    // transaction). An ordered row's successor waits for that record.
    f.deferred = true;
    return nullptr;
  } else {
    r = run_transition(
        f, "mark_delivered", lease_fate::delivered, [&](const call_options& c) { sk->record_delivered(st, cm, c); }, &sink_part);
  }
  if (r == recorded::ok) {
    with_metrics([](relay_metrics& x) { ++x.delivered; });
    breaker_outcome(outcome_class::delivered);
    if (scoped(cm.message)) {
      {
        std::lock_guard lock(mu);
        successor_ready = true;
      }
      cv.notify_all();
    }
    return nullptr;
  }
  if (r == recorded::sink_failed) {  // nothing committed: a failure of the row
    if (!detail::valid_failure_code(sink_part.code)) sink_part.code = "sink_failed";
    failed(f,
           sink_part.kind == outcome_class::permanent ? outcome_class::permanent : outcome_class::transient,
           sink_part);
    return nullptr;
  }
  if (r == recorded::failed) {
    with_metrics([](relay_metrics& x) { ++x.delivery_unrecorded; });
    log().error(
        "outbox relay {}: delivery_unrecorded: {} was published but its delivery could not be recorded; "
        "it is delivered again after its lease expires",
        owner, cm.message.id);
  }
  return nullptr;
}

}  // namespace spool::outbox
