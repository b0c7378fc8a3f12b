// The worker threads of a runtime (the consumer's, the worker pool's and the
// relay's): N threads running one body, a stop request they all see, and one
// join. What a worker does stays in its runtime; starting, stopping and
// joining them is written once, here.
#pragma once

#include <cstddef>
#include <functional>
#include <stop_token>
#include <thread>
#include <vector>

namespace spool::detail {

// Thread safety: start(), request_stop() and join() are called by the
// group's owner; request_stop() and token() may also be called from any
// thread while the group runs. The destructor requests stop and joins.
class worker_group {
 public:
  using body = std::function<void(const std::stop_token&)>;

  worker_group() = default;
  worker_group(const worker_group&) = delete;
  worker_group& operator=(const worker_group&) = delete;
  ~worker_group();

  // Starts n threads, each running b with the group's stop token. After a
  // join() the group starts again with a fresh token.
  // Precondition: no thread running (join() first).
  void start(std::size_t n, const body& b);
  // Asks every worker to stop: their tokens report it. Does not wait.
  void request_stop() noexcept;
  // The token the workers see, for waits outside the workers' bodies.
  [[nodiscard]] std::stop_token token() const noexcept { return stop_.get_token(); }
  // Waits for every worker to return. Does not ask them to stop.
  void join();
  [[nodiscard]] std::size_t size() const noexcept { return threads_.size(); }

 private:
  std::stop_source stop_;
  std::vector<std::thread> threads_;
  bool used_ = false;  // a join() ended a run: the next start() takes a fresh token
};

}  // namespace spool::detail
