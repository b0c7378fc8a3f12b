// The mq consumer runtime's public API (message-queue.md §5.9): start, stop,
// metrics. Its workers, outcomes and keeper are in mq/consumer/.
#include "spool/mq/consumer.hpp"

#include <fmt/format.h>

#include "mq/consumer/impl.hpp"
#include "runtime/retry_curve.hpp"
#include "spool/error.hpp"

namespace spool::mq {

std::chrono::seconds consumer::backoff(std::int64_t receive_count, std::chrono::seconds cap) {
  if (cap.count() <= 0) return std::chrono::seconds(0);
  const double d = spool::detail::exponential_delay(receive_count, 1, 2, static_cast<double>(cap.count()));
  return std::chrono::seconds(static_cast<std::int64_t>(d));
}

consumer::impl::impl(queue& q, message_handler h, batch_handler bh, consumer_options o)
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
  impl_->workers.start(impl_->opts.concurrency, [this](const std::stop_token& st) { impl_->work(st); });
}

void consumer::stop() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->workers.request_stop();
  impl_->workers.join();
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
