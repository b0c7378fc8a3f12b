// The consumer's outcomes: ack, nack with backoff and jitter, and the
// release of claims no handler started, each retried after a retryable
// failure for up to a third of the visibility window.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "common/log.hpp"
#include "mq/consumer/impl.hpp"
#include "spool/error.hpp"

namespace spool::mq {

using spool::detail::log;

// Outcomes are recorded even while stopping: they carry no stop token. A
// claim stays tracked (and extended) until its outcome is recorded.
void consumer::impl::nack(const delivered_message& d, const std::string& why, std::mt19937_64& rng) {
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
void consumer::impl::ack_all(const std::vector<const delivered_message*>& done) {
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
void consumer::impl::release_unstarted(const std::vector<delivered_message>& got, std::size_t from) {
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
bool consumer::impl::record(const std::string& id, const char* what, const std::function<void()>& call) {
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

}  // namespace spool::mq
