// The runtimes' and the tables' snapshots under their documented metric names
// (docs/METRICS.md), written through the capability-neutral text_writer.
#include <chrono>

#include "spool/database.hpp"
#include "spool/mq/consumer.hpp"
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/store.hpp"
#include "spool/prometheus.hpp"

namespace spool::prometheus {

namespace {

labels with(labels base, std::string name, std::string value) {
  base.emplace_back(std::move(name), std::move(value));
  return base;
}

}  // namespace

void write(text_writer& w, const ops::pool_metrics& m, const labels& base) {
  for (const auto& [type, c] : m.by_type) {
    const labels l = with(base, "type", type);
    w.counter("spool_ops_claimed_total", "Ops this pool claimed.", l, c.claimed);
    w.counter("spool_ops_succeeded_total", "Ops whose handler returned and whose ack was recorded.", l,
              c.succeeded);
    w.counter("spool_ops_failed_total", "Terminal failures.", l, c.failed);
    w.counter("spool_ops_retried_total", "Failures sent back to pending with a delay.", l, c.retried);
    w.counter("spool_ops_released_total", "Ops released without using an attempt.", l, c.released);
    w.counter("spool_ops_recovered_total", "Expired leases this pool's rescuer recovered.", l, c.recovered);
    w.counter("spool_ops_lease_lost_total", "Claims taken over while running or whose outcome was refused.",
              l, c.lease_lost);
    w.counter("spool_ops_db_errors_total", "Failed database calls.", l, c.db_errors);
  }
  for (const auto& [type, c] : m.by_type) {
    if (type.empty()) continue;  // errors not tied to a type have no handler
    w.histogram("spool_ops_handler_seconds", "Handler start to return, whatever the outcome.",
                with(base, "type", type), c.handler_latency);
  }
  w.gauge("spool_ops_in_flight", "Handlers running now.", base, static_cast<double>(m.in_flight));
  w.counter("spool_ops_idle_wakeups_total", "Idle waits ended by a wake-up.", base, m.wakeups);
  w.counter("spool_ops_idle_polls_total", "Idle waits that ended at poll_interval.", base, m.idle_polls);
  w.counter("spool_ops_dequeues_total", "Dequeue calls.", base, m.dequeues);
}

void write(text_writer& w, const outbox::relay_metrics& m, const labels& base) {
  w.counter("spool_outbox_claimed_total", "Rows leased.", base, m.claimed);
  w.counter("spool_outbox_delivered_total", "Rows marked delivered.", base, m.delivered);
  w.counter("spool_outbox_retried_total", "Transient failures sent back to pending.", base, m.retried);
  w.counter("spool_outbox_dead_lettered_total", "Rows dead-lettered.", base, m.dead_lettered);
  w.counter("spool_outbox_released_total", "Rows unpublished at shutdown.", base, m.released);
  w.counter("spool_outbox_lease_lost_total", "Renewals or transitions that found the lease gone.", base,
            m.lease_lost);
  w.counter("spool_outbox_store_errors_total", "Failed store calls.", base, m.store_errors);
  w.counter("spool_outbox_delivery_unrecorded_total", "Published but not recorded: will be delivered again.",
            base, m.delivery_unrecorded);
  w.counter("spool_outbox_claims_total", "Claim calls.", base, m.claims);
  w.counter("spool_outbox_wakeups_total", "Claim rounds asked for by a notification or a listener (re)start.", base,
            m.wakeups);
  w.gauge("spool_outbox_breaker_state", "Circuit breaker: 0 closed, 1 open, 2 half-open.", base,
          static_cast<double>(static_cast<int>(m.breaker)));
  w.gauge("spool_outbox_in_flight", "Leases held now.", base, static_cast<double>(m.in_flight));
  w.histogram("spool_outbox_sink_seconds", "Sink call start to return.", base, m.sink_latency);
}

void write(text_writer& w, const mq::consumer_metrics& m, const labels& base) {
  w.counter("spool_mq_claimed_total", "Messages handed to the handler.", base, m.claimed);
  w.counter("spool_mq_acked_total", "Messages whose handler returned and whose ack was recorded.", base,
            m.acked);
  w.counter("spool_mq_nacked_total", "Messages nacked with backoff after a handler failure.", base, m.nacked);
  w.counter("spool_mq_failed_total", "Handler failures.", base, m.failed);
  w.counter("spool_mq_quarantined_total", "Poison rows moved to queue_messages_failed.", base, m.quarantined);
  w.counter("spool_mq_outcome_errors_total", "Ack or nack calls that failed.", base, m.outcome_errors);
  w.counter("spool_mq_poll_errors_total", "Poll calls that failed.", base, m.poll_errors);
  w.gauge("spool_mq_in_flight", "Handlers running now.", base, static_cast<double>(m.in_flight));
  w.histogram("spool_mq_handler_seconds", "Handler start to return, whatever the outcome.", base,
              m.handler_latency);
}

void write(text_writer& w, const ops::queue_stats& s, const labels& base) {
  const char* help = "Ops in the table by status (pending includes scheduled ops).";
  w.gauge("spool_ops_table_ops", help, with(base, "status", "pending"), static_cast<double>(s.pending));
  w.gauge("spool_ops_table_ops", help, with(base, "status", "running"), static_cast<double>(s.running));
  w.gauge("spool_ops_table_ops", help, with(base, "status", "failed"), static_cast<double>(s.failed));
  w.gauge("spool_ops_table_ops", help, with(base, "status", "cancelled"), static_cast<double>(s.cancelled));
  w.gauge("spool_ops_table_done_24h", "Ops done in the last 24 hours.", base,
          static_cast<double>(s.done_24h));
}

void write(text_writer& w, const outbox::backlog_info& b, const labels& base) {
  const char* help = "Outbox rows by state (expired_leases is a subset of leased).";
  w.gauge("spool_outbox_backlog", help, with(base, "state", "pending"), static_cast<double>(b.pending));
  w.gauge("spool_outbox_backlog", help, with(base, "state", "leased"), static_cast<double>(b.leased));
  w.gauge("spool_outbox_backlog", help, with(base, "state", "expired_leases"),
          static_cast<double>(b.expired_leases));
  w.gauge("spool_outbox_backlog", help, with(base, "state", "dead"), static_cast<double>(b.dead));
  w.gauge("spool_outbox_oldest_pending_age_seconds", "Age of the oldest pending row (0 when none).", base,
          std::chrono::duration<double>(b.oldest_pending_age).count());
}

void write(text_writer& w, const outbox::horizon_info& h, const labels& base) {
  if (!h.applies) return;
  w.gauge(
      "spool_outbox_horizon_held_rows",
      "Due pending rows with an ordering key that the transaction horizon holds back (counted up to 10001).",
      base, static_cast<double>(h.held));
  w.gauge(
      "spool_outbox_horizon_oldest_transaction_age_seconds",
      "Age of the oldest open transaction holding the horizon (0 when none).", base,
      std::chrono::duration<double>(h.oldest_transaction_age.value_or(std::chrono::microseconds{0})).count());
}

void write(text_writer& w, const mq::queue_metrics& m, const labels& base) {
  const char* help = "Messages in the queue by state (expired is a subset of in_flight).";
  w.gauge("spool_mq_queue_messages", help, with(base, "state", "pending"), static_cast<double>(m.pending));
  w.gauge("spool_mq_queue_messages", help, with(base, "state", "in_flight"),
          static_cast<double>(m.in_flight));
  w.gauge("spool_mq_queue_messages", help, with(base, "state", "delayed"), static_cast<double>(m.delayed));
  w.gauge("spool_mq_queue_messages", help, with(base, "state", "expired"), static_cast<double>(m.expired));
}

void write(text_writer& w, const listener_info& l, const labels& base) {
  if (!l.active) return;
  w.gauge("spool_listener_connected", "1 while the shared LISTEN connection is up and listening.", base,
          l.connected ? 1.0 : 0.0);
  w.counter("spool_listener_reconnects_total",
            "Times the LISTEN connection was opened again after losing one.", base, l.reconnects);
}

}  // namespace spool::prometheus
