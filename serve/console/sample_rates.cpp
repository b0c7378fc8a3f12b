#include "serve/console/sample_rates.hpp"

#include <algorithm>

namespace spool::serve::console {

nlohmann::json rates_of(const std::deque<queue_sample>& samples, std::int64_t interval_s) {
  std::map<std::string, nlohmann::json> by_queue;
  std::map<std::string, std::int64_t> uncounted;  // per queue, the last point's shortfall
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const auto& prev = samples[i - 1];
    const auto& cur = samples[i];
    const double dt = static_cast<double>(std::max<std::int64_t>(1, cur.t - prev.t));
    std::map<std::string, std::int64_t> uncounted_now;
    for (const auto& [queue, counts] : cur.queues) {
      const auto before = prev.queues.find(queue);
      const std::int64_t total_before = before == prev.queues.end() ? 0 : before->second.total;
      const auto carried = uncounted.find(queue);
      const std::int64_t owed = carried == uncounted.end() ? 0 : carried->second;
      const std::int64_t left = counts.arrived - (counts.total - total_before) - owed;
      if (left < 0) uncounted_now[queue] = -left;
      by_queue[queue].push_back({{"t", cur.t},
                                 {"seconds", dt},
                                 {"enqueued", static_cast<double>(counts.arrived) / dt},
                                 {"completed", static_cast<double>(std::max<std::int64_t>(0, left)) / dt}});
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
  return {{"interval_s", interval_s}, {"queues", std::move(queues)}};
}

}  // namespace spool::serve::console
