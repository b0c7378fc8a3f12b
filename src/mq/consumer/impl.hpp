// The mq consumer runtime's state (message-queue.md §5.9), shared by its
// parts: consumer/work.cpp (the workers' poll and handler loop),
// consumer/outcomes.cpp (ack, nack, release, each retried within a third of
// the window) and consumer/keeper.cpp (the service that extends running
// claims). The public API is in mq/consumer.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "runtime/service.hpp"
#include "runtime/worker_group.hpp"
#include "spool/mq/consumer.hpp"

namespace spool::mq {

// Thread safety: the workers run work() concurrently; in_flight, the
// histogram and failed are under mutex, the counters are atomics, and the
// lifecycle fields are under lifecycle.
struct consumer::impl {
  impl(queue& q, message_handler h, batch_handler bh, consumer_options o);

  // ---- the workers (consumer/work.cpp) ----
  void work(const std::stop_token& stop);
  // Runs the handler on one message; a failure is nacked here, a success is
  // returned for the batch's ack.
  bool handle(const delivered_message& d, std::mt19937_64& rng);
  void handle_batch(const std::vector<delivered_message>& got, std::mt19937_64& rng);
  // Runs call, timing it and catching what it throws (why is set then).
  bool run_handler(const std::function<void()>& call, std::string& why);

  // ---- outcomes (consumer/outcomes.cpp) ----
  void nack(const delivered_message& d, const std::string& why, std::mt19937_64& rng);
  void ack_all(const std::vector<const delivered_message*>& done);
  void release_unstarted(const std::vector<delivered_message>& got, std::size_t from);
  bool record(const std::string& id, const char* what, const std::function<void()>& call);

  // ---- the keeper (consumer/keeper.cpp) ----
  void track(const std::string& receipt, bool running);
  void keep_round();

  queue& q;
  message_handler handler;
  batch_handler whole_batch;
  consumer_options opts;
  std::mutex mutex;
  std::map<std::string, std::chrono::steady_clock::time_point> in_flight;
  spool::detail::worker_group workers;
  spool::detail::periodic_service keeper;  // keep_round every 200 ms; stopped after the workers
  bool started = false, stopped = false;
  std::mutex lifecycle;
  std::atomic<std::uint64_t> delivered{0}, acked{0}, nacked{0}, outcome_errors{0}, poll_errors{0};
  // Under mutex: the histogram and its failure count change together.
  latency_histogram handler_latency;
  std::uint64_t failed = 0;
  // The queue's quarantine counter when start() ran (read by metrics() without the lifecycle lock).
  std::atomic<std::uint64_t> quarantined_at_start{0};
  std::atomic<bool> counting{false};
};

}  // namespace spool::mq
