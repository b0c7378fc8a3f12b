// spool::mq::consumer — a small runtime that polls a queue with N workers and
// runs a handler per message (message-queue.md §5.9): success acks, an
// exception nacks with exponential backoff, and the claim is extended every
// visibility/3 while the handler runs. stop() stops polling, lets running
// handlers finish and records their outcomes.
// Thread safety: start() and stop() may be called from any thread; the
// handler runs on the consumer's worker threads, concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>

#include "spool/mq/queue.hpp"

namespace spool::mq {

struct consumer_options {
  std::size_t concurrency = 4;                   // worker threads; at least 1
  std::chrono::milliseconds idle_wait{1000};     // poll_wait timeout per idle round
  std::chrono::seconds max_retry_delay{15 * 60};  // cap of the nack backoff
  double retry_jitter = 0.2;                     // ± fraction applied to the backoff
};

// The handler's verdict is its return: normal return acks the message; any
// exception nacks it with min(max_retry_delay, 2^(receive_count-1) s) ± jitter.
using message_handler = std::function<void(const delivered_message&)>;

struct consumer_stats {
  std::uint64_t delivered = 0, acked = 0, nacked = 0, outcome_errors = 0, poll_errors = 0;
};

class consumer {
 public:
  // q must outlive the consumer. Errors: invalid_argument (concurrency 0, no handler).
  consumer(queue& q, message_handler handler, consumer_options options = {});
  ~consumer();  // stop()
  consumer(const consumer&) = delete;
  consumer& operator=(const consumer&) = delete;

  // Starts the workers. Errors: invalid_state when already started or stopped.
  void start();
  // Stops polling at once, waits for running handlers and records their
  // outcomes, then joins every thread. Idempotent.
  void stop();
  [[nodiscard]] consumer_stats stats() const;

  // The nack delay after a failed delivery numbered receive_count (§5.9), before jitter.
  [[nodiscard]] static std::chrono::seconds backoff(std::int64_t receive_count, std::chrono::seconds cap);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spool::mq
