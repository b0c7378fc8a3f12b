// The console's throughput history of the message queue. Acked messages
// leave no row, so the rates are sampled while the server runs: every
// interval the sampler reads each queue's row count (mq::browser::queues)
// and its rows per creation second over a recent window
// (mq::browser::created_since), and keeps an hour of samples. Per interval,
// enqueued = the rows that appeared in the window's seconds since the last
// sample (so a transaction that commits a few seconds after its rows' time
// still counts once), and completed = enqueued − the growth of the queue. A
// message that arrives and is acked within one interval is in neither. (Ops
// need no sampling: their rows keep their times, see ops::queue::throughput.)
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <thread>

#include "serve/console/sample_rates.hpp"

namespace spool::mq {
class browser;
}

namespace spool::serve::console {

// Thread safety: history() may be called from any thread while the sampler runs.
class mq_sampler {
 public:
  // Starts sampling at once. Precondition: b outlives the sampler.
  mq_sampler(mq::browser& b, std::chrono::seconds interval);
  ~mq_sampler();
  mq_sampler(const mq_sampler&) = delete;
  mq_sampler& operator=(const mq_sampler&) = delete;

  // {"interval_s", "queues": [{"queue", "points": [{"t", "seconds", "enqueued", "completed"}]}]}: per
  // queue, one point per interval of the last hour (t: the interval's end, unix seconds; seconds: its
  // length; rates per second).
  [[nodiscard]] nlohmann::json history() const;

 private:
  // Per queue, per creation second: the rows seen there.
  using seconds_seen = std::map<std::string, std::map<std::int64_t, std::int64_t>>;

  void run(const std::stop_token& stop);
  void take(seconds_seen& seen);

  mq::browser& browser_;
  std::chrono::seconds interval_;
  mutable std::mutex mu_;
  std::deque<queue_sample> samples_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: it starts once everything above exists
};

}  // namespace spool::serve::console
