// The arithmetic of the console's message-queue throughput history, apart
// from the sampling thread (sampler.hpp) so that each case can be checked on
// planted samples: per interval, enqueued = the rows that arrived since the
// last sample, completed = enqueued − the growth of the queue.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace spool::serve::console {

// One queue in one sample.
struct queue_counts {
  std::int64_t total = 0;    // rows in the queue (visible, in flight and delayed)
  std::int64_t arrived = 0;  // rows first seen by this sample
};

// What one sample read, at unix second t.
struct queue_sample {
  std::int64_t t = 0;
  std::map<std::string, queue_counts> queues;
};

// {"interval_s", "queues": [{"queue", "points": [{"t", "seconds", "enqueued", "completed"}]}]}: one
// point per sample after the first (t: the interval's end; seconds: its length; rates per second).
// A sample reads its arrivals and its totals in two statements, so a row committed between them can
// be in a total before it is an arrival: such a shortfall is carried to the next point, once, instead
// of being taken for a completion there. Pure; no errors.
[[nodiscard]] nlohmann::json rates_of(const std::deque<queue_sample>& samples, std::int64_t interval_s);

}  // namespace spool::serve::console
