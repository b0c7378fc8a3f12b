#include "serve/console/sampler.hpp"

#include <algorithm>

#include "spool/error.hpp"
#include "spool/mq/browser.hpp"

namespace spool::serve::console {

namespace {

constexpr std::int64_t history_s = 3600;

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

mq_sampler::mq_sampler(mq::browser& b, std::chrono::seconds interval)
    : browser_(b),
      interval_(std::max(interval, std::chrono::seconds(1))),
      thread_([this](const std::stop_token& stop) { run(stop); }) {}

mq_sampler::~mq_sampler() {
  thread_.request_stop();
  wake_.notify_all();
}

// One sample. Arrivals are the growth of each (queue, second) cell of the
// window: a row counted once is not counted again, and a row whose
// transaction commits after a sample (stamped with an earlier second) is
// counted at the next one, as long as its second is still in the window.
void mq_sampler::take(seconds_seen& seen) {
  const auto t = now_s();
  const auto window = std::max<std::int64_t>(10, 2 * interval_.count());
  const auto totals = [this] {
    std::map<std::string, std::int64_t> out;
    for (const auto& q : browser_.queues()) out[q.queue] = q.visible + q.in_flight + q.delayed;
    return out;
  };
  // Arrivals and totals are two statements. A row committed between them
  // would be counted in one and not the other, so the arrivals are read
  // between two readings of the totals until both agree (a busy queue may
  // never agree: then the arrivals come first, and history() carries the
  // difference to the next sample).
  seconds_seen now_seen;
  auto total = totals();
  for (int attempt = 0;; ++attempt) {
    now_seen.clear();
    for (const auto& a : browser_.created_since(t - window)) now_seen[a.queue][a.second] = a.rows;
    auto after = totals();
    const bool agreed = after == total;
    total = std::move(after);
    if (agreed || attempt == 3) break;
  }
  queue_sample s{t, {}};
  for (const auto& [queue, n] : total) s.queues[queue].total = n;
  for (const auto& [queue, by_second] : now_seen) {
    const auto before = seen.find(queue);
    std::int64_t arrived = 0;
    for (const auto& [second, rows] : by_second) {
      std::int64_t had = 0;
      if (before != seen.end()) {
        const auto it = before->second.find(second);
        if (it != before->second.end()) had = it->second;
      }
      arrived += std::max<std::int64_t>(0, rows - had);
    }
    s.queues[queue].arrived = arrived;
  }
  seen = std::move(now_seen);
  std::lock_guard lock(mu_);
  samples_.push_back(std::move(s));
  while (!samples_.empty() && samples_.front().t < t - history_s) samples_.pop_front();
}

void mq_sampler::run(const std::stop_token& stop) {
  seconds_seen seen;
  while (!stop.stop_requested()) {
    try {
      take(seen);
    } catch (const spool::error&) {
      // The database is away: this interval has no sample, the next one tries again.
    }
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, stop, interval_, [] { return false; });
  }
}

nlohmann::json mq_sampler::history() const {
  std::lock_guard lock(mu_);
  return rates_of(samples_, interval_.count());
}

}  // namespace spool::serve::console
