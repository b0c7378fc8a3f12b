// The mq consumer runtime (message-queue.md §5.9).
#include "spool/mq/consumer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "runtime/retry_curve.hpp"
#include "runtime/service.hpp"
#include "spool/error.hpp"

namespace spool::mq {

using spool::detail::log;

std::chrono::seconds consumer::backoff(std::int64_t receive_count, std::chrono::seconds cap) {
  if (cap.count() <= 0) return std::chrono::seconds(0);
  const double d = spool::detail::exponential_delay(receive_count, 1, 2, static_cast<double>(cap.count()));
  return std::chrono::seconds(static_cast<std::int64_t>(d));
}

struct consumer::impl {
  impl(queue& q, message_handler h, batch_handler bh, consumer_options o)
      : q(q), handler(std::move(h)), whole_batch(std::move(bh)), opts(o) {
    if (opts.concurrency == 0) throw error(errc::invalid_argument, "consumer concurrency must be at least 1");
    if (!handler && !whole_batch) throw error(errc::invalid_argument, "consumer needs a handler");
    if (opts.batch == 0 || opts.batch > 1000) {
      throw error(errc::invalid_argument, fmt::format("consumer batch must be 1 … 1000, got {}", opts.batch));
    }
    if (opts.retry_jitter < 0 || opts.retry_jitter >= 1) {
      throw error(errc::invalid_argument, fmt::format("retry_jitter must be in [0, 1), got {}", opts.retry_jitter));
    }
  }

  void work(const std::stop_token& stop) {
    std::mt19937_64 rng(std::random_device{}());
    while (!stop.stop_requested()) {
      std::vector<delivered_message> got;
      try {
        got = q.poll_wait(opts.batch, opts.idle_wait, {std::nullopt, stop});
      } catch (const error& e) {
        if (stop.stop_requested() || e.code() == errc::stopped) return;
        ++poll_errors;
        log().warn("consumer: poll on queue failed: {}", e.what());
        (void)spool::detail::sleep_for(std::chrono::milliseconds(500), stop);
        continue;
      }
      for (const auto& d : got) track(d.receipt, true);
      if (whole_batch) {
        handle_batch(got, rng);
        continue;
      }
      std::vector<const delivered_message*> succeeded;
      std::size_t next = 0;
      for (; next < got.size() && (next == 0 || !stop.stop_requested()); ++next) {
        if (handle(got[next], rng)) succeeded.push_back(&got[next]);
      }
      ack_all(succeeded);
      release_unstarted(got, next);
    }
  }

  // Runs the handler on one message; a failure is nacked here, a success is
  // returned for the batch's ack.
  bool handle(const delivered_message& d, std::mt19937_64& rng) {
    ++delivered;
    std::string why;
    const bool ok = run_handler([&] { handler(d); }, why);
    if (!ok) nack(d, why, rng);
    return ok;
  }

  void handle_batch(const std::vector<delivered_message>& got, std::mt19937_64& rng) {
    delivered += got.size();
    std::string why;
    if (run_handler([&] { whole_batch(std::span<const delivered_message>(got)); }, why)) {
      std::vector<const delivered_message*> all;
      for (const auto& d : got) all.push_back(&d);
      ack_all(all);
    } else {
      for (const auto& d : got) nack(d, why, rng);
    }
  }

  template <class Call>
  bool run_handler(Call&& call, std::string& why) {
    bool ok = true;
    const auto began = std::chrono::steady_clock::now();
    try {
      call();
    } catch (const std::exception& e) {
      ok = false;
      why = e.what();
    } catch (...) {
      ok = false;
      why = "unknown exception";
    }
    std::lock_guard lock(mutex);
    handler_latency.observe(std::chrono::steady_clock::now() - began);
    if (!ok) ++failed;
    return ok;
  }

  // Outcomes are recorded even while stopping: they carry no stop token. A
  // claim stays tracked (and extended) until its outcome is recorded.
  void nack(const delivered_message& d, const std::string& why, std::mt19937_64& rng) {
    const auto base = backoff(d.receive_count.value_or(1), opts.max_retry_delay);
    std::uniform_real_distribution<double> jitter(1 - opts.retry_jitter, 1 + opts.retry_jitter);
    const auto delay = std::chrono::seconds(std::llround(static_cast<double>(base.count()) * jitter(rng)));
    log().info("consumer: message {} failed ({}); retry in {} s", d.broker_message_id, why, delay.count());
    if (record(d.broker_message_id, "nack", [&] { (void)q.nack(d.receipt, delay); })) ++nacked;
    track(d.receipt, false);
  }

  // One ack for one message, one ack_batch for more. After an in_doubt
  // attempt a repeated ack_batch reports the already-deleted rows as
  // not_found: those count as settled, not as acked here.
  void ack_all(const std::vector<const delivered_message*>& done) {
    if (done.size() == 1) {
      if (record(done[0]->broker_message_id, "ack", [&] { q.ack(done[0]->receipt); })) ++acked;
    } else if (!done.empty()) {
      std::vector<std::string> receipts;
      receipts.reserve(done.size());
      for (const auto* d : done) receipts.push_back(d->receipt);
      std::vector<ack_status> statuses;
      const auto what = fmt::format("{} and {} more", done[0]->broker_message_id, done.size() - 1);
      if (record(what, "ack", [&] { statuses = q.ack_batch(receipts); })) {
        acked += static_cast<std::uint64_t>(std::count(statuses.begin(), statuses.end(), ack_status::acked));
      }
    }
    for (const auto* d : done) track(d->receipt, false);
  }

  // At stop, claims no handler started go back at once (defer: no failure
  // counted) instead of waiting out their window.
  void release_unstarted(const std::vector<delivered_message>& got, std::size_t from) {
    for (std::size_t i = from; i < got.size(); ++i) {
      (void)record(got[i].broker_message_id, "release", [&] { (void)q.defer(got[i].receipt); });
      track(got[i].receipt, false);
    }
  }

  // Runs one outcome call, repeating it after a retryable failure (SQLite
  // busy, a dropped connection) for up to a third of the visibility window.
  // Giving up leaves the message claimed until its window lapses and then
  // redelivers it: a duplicate the handler has already paid for. After an
  // in_doubt attempt, not_found means that attempt (or the window) already
  // settled the claim. Returns whether the call took effect here.
  template <class Call>
  bool record(const std::string& id, const char* what, Call&& call) {
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
          log().info("consumer: {} of message {} was in doubt and is settled now", what, id);
          return false;
        }
        if (!e.retryable() || clock::now() + pause > give_up) {
          ++outcome_errors;
          log().warn("consumer: could not record the outcome ({}) of message {}: {}", what, id, e.what());
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

  // One round of the keeper service: extends every claim that is due. The
  // receipts are collected under the lock and extended outside it; one that a
  // worker settled meanwhile only fails its extension (logged).
  void keep_round() {
    std::vector<std::string> due_now;
    {
      std::lock_guard lock(mutex);
      const auto now = std::chrono::steady_clock::now();
      for (auto& [receipt, due] : in_flight) {
        if (due > now) continue;
        due = now + q.visibility_timeout() / 3;
        due_now.push_back(receipt);
      }
    }
    for (const auto& r : due_now) {
      try {
        q.extend_visibility(r, q.visibility_timeout());
      } catch (const error& e) {
        log().warn("consumer: could not extend a claim: {}", e.what());
      }
    }
  }

  queue& q;
  message_handler handler;
  batch_handler whole_batch;
  consumer_options opts;
  std::mutex mutex;
  std::map<std::string, std::chrono::steady_clock::time_point> in_flight;
  std::vector<std::jthread> workers;
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

namespace {
constexpr std::chrono::milliseconds keeper_interval{200};
}  // namespace

consumer::consumer(queue& q, message_handler handler, consumer_options options)
    : impl_(std::make_unique<impl>(q, std::move(handler), batch_handler(), options)) {}

consumer::consumer(queue& q, batch_handler handler, consumer_options options)
    : impl_(std::make_unique<impl>(q, message_handler(), std::move(handler), options)) {}

consumer::~consumer() { stop(); }

void consumer::start() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->started || impl_->stopped) throw error(errc::invalid_state, "consumer already started or stopped");
  impl_->started = true;
  impl_->quarantined_at_start = impl_->q.counters().quarantined;
  impl_->counting = true;
  impl_->keeper.start(keeper_interval, [this](const std::stop_token&) {
    impl_->keep_round();
    return std::optional(keeper_interval);
  });
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
  impl_->keeper.stop();  // the workers settled or released every claim they tracked
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
