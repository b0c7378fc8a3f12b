// A runtime's worker threads: start, stop, join.
#include "runtime/worker_group.hpp"

namespace spool::detail {

worker_group::~worker_group() {
  request_stop();
  join();
}

void worker_group::start(std::size_t n, const body& b) {
  if (used_) {
    // GCC 12 reports libstdc++'s stop_source() as reading itself
    // uninitialized (it passes *this to its state's constructor as a tag,
    // which never reads it): a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
    stop_ = std::stop_source();
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    used_ = false;
  }
  threads_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    threads_.emplace_back([b, token = stop_.get_token()] { b(token); });
  }
}

void worker_group::request_stop() noexcept { (void)stop_.request_stop(); }

void worker_group::join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  used_ = true;
}

}  // namespace spool::detail
