// The consumer's keeper: the claims being handled, and the service round
// that extends each one a third of the way into its window, so a slow
// handler keeps its message.
#include "common/log.hpp"
#include "mq/consumer/impl.hpp"
#include "spool/error.hpp"

namespace spool::mq {

using spool::detail::log;

// Claims being handled, extended every visibility/3 by the keeper thread.
void consumer::impl::track(const std::string& receipt, bool running) {
  std::lock_guard lock(mutex);
  if (running) {
    in_flight[receipt] = keeper.time().now() + q.visibility_timeout() / 3;
  } else {
    in_flight.erase(receipt);
  }
}

// One round of the keeper service: extends every claim that is due. The
// receipts are collected under the lock and extended outside it; one that a
// worker settled meanwhile only fails its extension (logged).
void consumer::impl::keep_round() {
  std::vector<std::string> due_now;
  {
    std::lock_guard lock(mutex);
    const auto now = keeper.time().now();
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

}  // namespace spool::mq
