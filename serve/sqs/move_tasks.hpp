// The message move tasks of StartMessageMoveTask: each redrives one
// dead-letter queue in a thread of its own, at most at its rate, until the
// queue is empty, it is cancelled, or a step fails. Tasks live in the
// server's memory: a restart ends them (the messages they had not moved stay
// in the dead-letter queue, and one claimed mid-move reappears there after
// its visibility window).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

namespace spool::serve::sqs {

struct move_task_info {
  std::string handle;  // the TaskHandle
  std::string source_arn, destination_arn;  // destination empty: each message's own source queue
  std::int64_t max_per_second = 0;          // 0: as fast as it goes
  std::string status = "RUNNING";           // RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED
  std::int64_t moved = 0, to_move = 0;
  std::string failure_reason;
  std::int64_t started_ms = 0;
};

// Moves up to max messages and returns how many it moved (0: the source is
// empty, the task is done). Throws to fail the task (its what() is the
// FailureReason).
using move_step = std::function<std::size_t(std::stop_token, std::size_t max)>;

// Thread safety: every member may be called from any thread.
class move_tasks {
 public:
  move_tasks();
  ~move_tasks();  // cancels every task and waits for their threads
  move_tasks(const move_tasks&) = delete;
  move_tasks& operator=(const move_tasks&) = delete;

  // Starts a task (info.handle is filled in) running step. Throws
  // sqs::error(UnsupportedOperation) while a task of the same source runs.
  std::string start(move_task_info info, move_step step);
  // The source's tasks, newest first, at most max.
  [[nodiscard]] std::vector<move_task_info> list(const std::string& source_arn, std::size_t max) const;
  // Cancels a running task and returns it. Throws
  // sqs::error(ResourceNotFoundException) for an unknown or finished task.
  move_task_info cancel(const std::string& handle);
  void cancel_all() noexcept;

 private:
  struct task;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<task>> tasks_;  // oldest first
};

}  // namespace spool::serve::sqs
