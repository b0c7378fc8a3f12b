// spool::mq::consumer — a small runtime that polls a queue with N workers and
// runs a handler per message (message-queue.md §5.9): success acks, an
// exception nacks with exponential backoff, and the claim is extended every
// visibility/3 while the handler runs. stop() stops polling, lets running
// handlers finish and records their outcomes. Each worker can claim `batch`
// messages per poll and ack the handled ones in one statement (issue 13).
// Thread safety: start() and stop() may be called from any thread; the
// handler runs on the consumer's worker threads, concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stop_token>

#include "spool/metrics.hpp"
#include "spool/mq/queue.hpp"

namespace spool::mq {

struct consumer_options {
  std::size_t concurrency = 4;                   // worker threads; at least 1
  std::chrono::milliseconds idle_wait{1000};     // poll_wait timeout per idle round
  std::chrono::seconds max_retry_delay{15 * 60};  // cap of the nack backoff
  double retry_jitter = 0.2;                     // ± fraction applied to the backoff
  // Messages each worker claims per poll (1 … 1000). The worker handles them
  // in turn (one poll never returns two messages of a group) and acks the
  // successful ones in one ack_batch; a failure is nacked at once. Claims
  // waiting their turn are extended like running ones. At stop, the claims no
  // handler started yet are released (defer with no delay) for other workers.
  std::size_t batch = 1;
};

// The handler's verdict is its return: normal return acks the message; any
// exception nacks it with min(max_retry_delay, 2^(receive_count-1) s) ± jitter.
using message_handler = std::function<void(const delivered_message&)>;
// A handler for a whole claimed batch (at most `batch` messages, at least
// one): normal return acks them all, an exception nacks them all.
using batch_handler = std::function<void(std::span<const delivered_message>)>;

struct consumer_stats {
  std::uint64_t delivered = 0, acked = 0, nacked = 0, outcome_errors = 0, poll_errors = 0;
};

// The consumer's metrics snapshot (docs/METRICS.md, "Message queue"). Counters
// grow from zero for the life of the consumer.
struct consumer_metrics {
  std::uint64_t claimed = 0;          // messages handed to the handler
  std::uint64_t acked = 0;            // handler returned, ack recorded
  std::uint64_t nacked = 0;           // handler threw, nack with backoff recorded
  std::uint64_t failed = 0;           // handler threw (whether or not the nack was recorded)
  std::uint64_t quarantined = 0;      // poison rows the queue's polls moved aside since start()
  std::uint64_t outcome_errors = 0;   // ack or nack calls that failed
  std::uint64_t poll_errors = 0;      // poll calls that failed (retried after 500 ms)
  std::int64_t in_flight = 0;         // handlers running now
  latency_histogram handler_latency;  // handler start to return, whatever the outcome
};

class consumer {
 public:
  // q must outlive the consumer. Errors: invalid_argument (concurrency 0,
  // batch outside 1 … 1000, no handler).
  consumer(queue& q, message_handler handler, consumer_options options = {});
  // The same runtime with one handler call per claimed batch. Errors:
  // invalid_argument (concurrency 0, batch outside 1 … 1000, no handler).
  consumer(queue& q, batch_handler handler, consumer_options options = {});
  ~consumer();  // stop()
  consumer(const consumer&) = delete;
  consumer& operator=(const consumer&) = delete;

  // Starts the workers. Errors: invalid_state when already started or stopped.
  void start();
  // Stops polling at once, waits for running handlers and records their
  // outcomes, then joins every thread. Idempotent.
  void stop();
  [[nodiscard]] consumer_stats stats() const;
  // A consistent snapshot; safe from any thread, also after stop().
  // quarantined counts the queue object's quarantines (queue_counters) since
  // start(), so it includes other polls made through the same queue object.
  [[nodiscard]] consumer_metrics metrics() const;

  // The nack delay after a failed delivery numbered receive_count (§5.9), before jitter.
  [[nodiscard]] static std::chrono::seconds backoff(std::int64_t receive_count, std::chrono::seconds cap);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spool::mq
