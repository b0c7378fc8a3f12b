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
  sample s{t, {}};
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
  std::map<std::string, nlohmann::json> by_queue;
  // A sample reads its arrivals and its totals in two statements, so a row
  // committed between them is in the totals but not yet an arrival; the next
  // sample counts it as one. Carried for one sample, that difference is not
  // taken for a completion then.
  std::map<std::string, std::int64_t> uncounted;
  for (std::size_t i = 1; i < samples_.size(); ++i) {
    const auto& prev = samples_[i - 1];
    const auto& cur = samples_[i];
    const double dt = static_cast<double>(std::max<std::int64_t>(1, cur.t - prev.t));
    std::map<std::string, std::int64_t> uncounted_now;
    for (const auto& [queue, counts] : cur.queues) {
      const auto before = prev.queues.find(queue);
      const std::int64_t total_before = before == prev.queues.end() ? 0 : before->second.total;
      const auto arrived = counts.arrived;
      const auto carried = uncounted.find(queue);
      const std::int64_t owed = carried == uncounted.end() ? 0 : carried->second;
      const std::int64_t left = arrived - (counts.total - total_before) - owed;
      if (left < 0) uncounted_now[queue] = -left;
      const auto completed = std::max<std::int64_t>(0, left);
      by_queue[queue].push_back({{"t", cur.t},
                                 {"seconds", dt},
                                 {"enqueued", static_cast<double>(arrived) / dt},
                                 {"completed", static_cast<double>(completed) / dt}});
    }
    // A queue emptied since the last sample: its rows all left.
    for (const auto& [queue, counts] : prev.queues) {
      if (cur.queues.count(queue) == 0 && counts.total > 0) {
        by_queue[queue].push_back({{"t", cur.t},
                                   {"seconds", dt},
                                   {"enqueued", 0.0},
                                   {"completed", static_cast<double>(counts.total) / dt}});
      }
    }
    uncounted = std::move(uncounted_now);
  }
  nlohmann::json queues = nlohmann::json::array();
  for (auto& [queue, points] : by_queue) queues.push_back({{"queue", queue}, {"points", std::move(points)}});
  return {{"interval_s", interval_.count()}, {"queues", std::move(queues)}};
}

}  // namespace spool::serve::console
