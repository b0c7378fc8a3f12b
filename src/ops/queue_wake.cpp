// The op queue's wake-ups: the change marker, ready subscriptions and waiting for a change.
#include <algorithm>

#include "ops/queue_impl.hpp"
#include "ops/store.hpp"
#include "spool/ops/queue.hpp"

namespace spool::ops {

// ---- wake-ups ----

std::uint64_t queue::change_marker() {
  return impl_->run([&] { return impl_->st->change_marker(impl_->limits({})); });
}

std::shared_ptr<void> queue::subscribe_ready(std::vector<std::string> types, std::function<void(bool)> fn) {
  if (impl_->is_closed()) throw impl_->stopped_error();
  std::sort(types.begin(), types.end());
  return impl_->st->subscribe([types = std::move(types), fn = std::move(fn)](const std::string* type) {
    if (type == nullptr) {
      fn(false);
    } else if (std::binary_search(types.begin(), types.end(), *type)) {
      fn(true);
    }
  });
}

queue::wake queue::wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout,
                                   std::stop_token stop) {
  if (impl_->is_closed()) throw impl_->stopped_error();
  impl_->st->wait_for_change(seen, timeout, stop, [this] { return impl_->is_closed(); });
  if (impl_->is_closed()) return wake::closed;
  if (stop.stop_requested()) return wake::stopped;
  return change_marker() != seen ? wake::changed : wake::timed_out;
}

}  // namespace spool::ops
