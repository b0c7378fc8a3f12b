// The console's throughput history of the message queue. Acked messages
// leave no row, so the rates are sampled while the server runs: every
// interval the sampler reads each queue's row count and the rows created
// since the last sample (one scan, mq::browser::queues), and keeps an hour.
// Per interval, enqueued = the rows created in it that are still there (rows
// are dated in whole seconds: those of the boundary second that the last
// sample counted are not counted again), and completed = enqueued − the
// growth of the queue; a message that arrives and is acked within one
// interval is in neither. (Ops need no sampling: their
// rows keep their times, see ops::queue::throughput.)
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
  struct sample {
    std::int64_t t = 0;
    struct counts {
      std::int64_t total = 0, arrived = 0, in_boundary = 0;  // in_boundary: rows created in the second t
    };
    std::map<std::string, counts> queues;
  };
  void run(const std::stop_token& stop);

  mq::browser& browser_;
  std::chrono::seconds interval_;
  mutable std::mutex mu_;
  std::deque<sample> samples_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: it starts once everything above exists
};

}  // namespace spool::serve::console
