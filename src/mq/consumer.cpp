// The mq consumer runtime (message-queue.md §5.9).
#include "spool/mq/consumer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/log.hpp"

namespace spool::mq {
using spool::detail::log;
}
#include "spool/error.hpp"

namespace spool::mq {

std::chrono::seconds consumer::backoff(std::int64_t receive_count, std::chrono::seconds cap) {
  const std::int64_t n = std::max<std::int64_t>(receive_count, 1) - 1;
  if (n >= 62) return cap;
  return std::min(cap, std::chrono::seconds(std::int64_t{1} << n));
}

struct consumer::impl {
  impl(queue& q, message_handler h, consumer_options o) : q(q), handler(std::move(h)), opts(o) {
    if (opts.concurrency == 0) throw error(errc::invalid_argument, "consumer concurrency must be at least 1");
    if (!handler) throw error(errc::invalid_argument, "consumer needs a handler");
    if (opts.retry_jitter < 0 || opts.retry_jitter >= 1) {
      throw error(errc::invalid_argument, fmt::format("retry_jitter must be in [0, 1), got {}", opts.retry_jitter));
    }
  }

  void work(const std::stop_token& stop) {
    std::mt19937_64 rng(std::random_device{}());
    while (!stop.stop_requested()) {
      std::vector<delivered_message> got;
      try {
        got = q.poll_wait(1, opts.idle_wait, {std::nullopt, stop});
      } catch (const error& e) {
        if (stop.stop_requested() || e.code() == errc::stopped) return;
        ++poll_errors;
        log().warn("consumer: poll on queue failed: {}", e.what());
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        continue;
      }
      for (const auto& d : got) handle(d, rng);
    }
  }

  void handle(const delivered_message& d, std::mt19937_64& rng) {
    ++delivered;
    track(d.receipt, true);
    bool ok = true;
    std::string why;
    const auto began = std::chrono::steady_clock::now();
    try {
      handler(d);
    } catch (const std::exception& e) {
      ok = false;
      why = e.what();
    } catch (...) {
      ok = false;
      why = "unknown exception";
    }
    {
      std::lock_guard lock(mutex);
      handler_latency.observe(std::chrono::steady_clock::now() - began);
      if (!ok) ++failed;
    }
    // Outcomes are recorded even while stopping: they carry no stop token. The
    // claim stays tracked (and extended) until its outcome is recorded.
    if (ok) {
      if (record(d, "ack", [&] { q.ack(d.receipt); })) ++acked;
    } else {
      const auto base = backoff(d.receive_count.value_or(1), opts.max_retry_delay);
      std::uniform_real_distribution<double> jitter(1 - opts.retry_jitter, 1 + opts.retry_jitter);
      const auto delay = std::chrono::seconds(std::llround(static_cast<double>(base.count()) * jitter(rng)));
      log().info("consumer: message {} failed ({}); retry in {} s", d.broker_message_id, why, delay.count());
      if (record(d, "nack", [&] { (void)q.nack(d.receipt, delay); })) ++nacked;
    }
    track(d.receipt, false);
  }

  // Runs one outcome call, repeating it after a retryable failure (SQLite
  // busy, a dropped connection) for up to a third of the visibility window.
  // Giving up leaves the message claimed until its window lapses and then
  // redelivers it: a duplicate the handler has already paid for. After an
  // in_doubt attempt, not_found means that attempt (or the window) already
  // settled the claim. Returns whether the call took effect here.
  template <class Call>
  bool record(const delivered_message& d, const char* what, Call&& call) {
    using clock = std::chrono::steady_clock;
    const auto give_up = clock::now() + q.visibility_timeout() / 3;
    std::chrono::milliseconds pause{25};
    bool doubt = false;
    for (;;) {
      try {
        call();
        return true;
      } catch (const error& e) {
        if (doubt && e.code() == errc::not_found) {
          log().info("consumer: {} of message {} was in doubt and is settled now", what, d.broker_message_id);
          return false;
        }
        if (!e.retryable() || clock::now() + pause > give_up) {
          ++outcome_errors;
          log().warn("consumer: could not record the outcome ({}) of message {}: {}", what, d.broker_message_id,
                     e.what());
          return false;
        }
        doubt = doubt || e.code() == errc::in_doubt;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(1000));
      }
    }
  }

  // Claims being handled, extended every visibility/3 by the keeper thread.
  void track(const std::string& receipt, bool running) {
    std::lock_guard lock(mutex);
    if (running) {
      in_flight[receipt] = std::chrono::steady_clock::now() + q.visibility_timeout() / 3;
    } else {
      in_flight.erase(receipt);
    }
  }

  void keep_claims(const std::stop_token& stop) {
    std::unique_lock lock(mutex);
    while (!stop.stop_requested() || !in_flight.empty()) {
      const auto now = std::chrono::steady_clock::now();
      for (auto& [receipt, due] : in_flight) {
        if (due > now) continue;
        due = now + q.visibility_timeout() / 3;
        const std::string r = receipt;
        lock.unlock();
        try {
          q.extend_visibility(r, q.visibility_timeout());
        } catch (const error& e) {
          log().warn("consumer: could not extend a claim: {}", e.what());
        }
        lock.lock();
        break;  // the map may have changed: rescan
      }
      keeper_cv.wait_for(lock, std::chrono::milliseconds(200));
      if (stop.stop_requested() && in_flight.empty()) break;
    }
  }

  queue& q;
  message_handler handler;
  consumer_options opts;
  std::mutex mutex;
  std::condition_variable keeper_cv;
  std::map<std::string, std::chrono::steady_clock::time_point> in_flight;
  std::vector<std::jthread> workers;
  std::jthread keeper;
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

consumer::consumer(queue& q, message_handler handler, consumer_options options)
    : impl_(std::make_unique<impl>(q, std::move(handler), options)) {}

consumer::~consumer() { stop(); }

void consumer::start() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->started || impl_->stopped) throw error(errc::invalid_state, "consumer already started or stopped");
  impl_->started = true;
  impl_->quarantined_at_start = impl_->q.counters().quarantined;
  impl_->counting = true;
  impl_->keeper = std::jthread([this](const std::stop_token& st) { impl_->keep_claims(st); });
  for (std::size_t i = 0; i < impl_->opts.concurrency; ++i) {
    impl_->workers.emplace_back([this](const std::stop_token& st) { impl_->work(st); });
  }
}

void consumer::stop() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->stopped) return;
  impl_->stopped = true;
  for (auto& w : impl_->workers) w.request_stop();
  for (auto& w : impl_->workers) {
    if (w.joinable()) w.join();
  }
  impl_->keeper.request_stop();
  impl_->keeper_cv.notify_all();
  if (impl_->keeper.joinable()) impl_->keeper.join();
}

consumer_stats consumer::stats() const {
  return {impl_->delivered.load(), impl_->acked.load(), impl_->nacked.load(), impl_->outcome_errors.load(),
          impl_->poll_errors.load()};
}

consumer_metrics consumer::metrics() const {
  consumer_metrics m;
  m.claimed = impl_->delivered.load();
  m.acked = impl_->acked.load();
  m.nacked = impl_->nacked.load();
  m.outcome_errors = impl_->outcome_errors.load();
  m.poll_errors = impl_->poll_errors.load();
  const auto quarantined = impl_->q.counters().quarantined;
  std::lock_guard lock(impl_->mutex);
  m.failed = impl_->failed;
  m.handler_latency = impl_->handler_latency;
  m.in_flight = static_cast<std::int64_t>(impl_->in_flight.size());
  if (impl_->counting) m.quarantined = quarantined - impl_->quarantined_at_start;
  return m;
}

}  // namespace spool::mq
