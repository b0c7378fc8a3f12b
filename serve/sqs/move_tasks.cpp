#include "serve/sqs/move_tasks.hpp"

#include <algorithm>
#include <condition_variable>
#include <thread>

#include "common/uuid.hpp"
#include "serve/sqs/errors.hpp"

namespace spool::serve::sqs {

struct move_tasks::task {
  move_task_info info;  // under the owner's mu_
  std::jthread thread;
};

namespace {
std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

move_tasks::move_tasks() = default;

move_tasks::~move_tasks() {
  cancel_all();
  std::vector<std::shared_ptr<task>> all;
  {
    std::lock_guard lock(mu_);
    all = tasks_;
  }
  for (auto& t : all) {
    if (t->thread.joinable()) t->thread.join();
  }
}

std::string move_tasks::start(move_task_info info, move_step step) {
  auto t = std::make_shared<task>();
  // Under mu_ throughout: the thread's first update waits until t->thread is set.
  std::lock_guard lock(mu_);
  for (const auto& other : tasks_) {
    if (other->info.source_arn == info.source_arn &&
        (other->info.status == "RUNNING" || other->info.status == "CANCELLING")) {
      throw error("UnsupportedOperation", "A message move task is already running on this source queue.");
    }
  }
  // SQS keeps the ten most recent tasks of a source; here, the 100 most recent of all.
  while (tasks_.size() >= 100 && tasks_.front()->info.status != "RUNNING" &&
         tasks_.front()->info.status != "CANCELLING") {
    tasks_.erase(tasks_.begin());
  }
  info.handle = spool::detail::uuid_v4();
  info.status = "RUNNING";
  info.started_ms = now_ms();
  t->info = info;
  tasks_.push_back(t);
  const auto rate = info.max_per_second;
  t->thread = std::jthread([this, t = t.get(), step = std::move(step), rate](const std::stop_token& stop) {
    const auto begun = std::chrono::steady_clock::now();
    std::int64_t moved = 0;
    std::string status = "COMPLETED", reason;
    std::mutex sleep_mu;
    std::condition_variable_any sleeper;
    try {
      while (!stop.stop_requested()) {
        const auto n = step(stop, rate > 0 && rate < 10 ? static_cast<std::size_t>(rate) : 10);
        if (n == 0) break;
        moved += static_cast<std::int64_t>(n);
        {
          std::lock_guard progress(mu_);
          t->info.moved = moved;
        }
        if (rate > 0) {  // never ahead of `rate` messages a second since the start
          const auto due = begun + std::chrono::milliseconds(moved * 1000 / rate);
          std::unique_lock nap(sleep_mu);
          (void)sleeper.wait_until(nap, stop, due, [] { return false; });
        }
      }
      if (stop.stop_requested()) status = "CANCELLED";
    } catch (const std::exception& e) {
      status = "FAILED";
      reason = e.what();
    }
    std::lock_guard done(mu_);
    t->info.moved = moved;
    t->info.status = status;
    t->info.failure_reason = reason;
  });
  return info.handle;
}

std::vector<move_task_info> move_tasks::list(const std::string& source_arn, std::size_t max) const {
  std::lock_guard lock(mu_);
  std::vector<move_task_info> out;
  for (auto it = tasks_.rbegin(); it != tasks_.rend() && out.size() < max; ++it) {
    if ((*it)->info.source_arn == source_arn) out.push_back((*it)->info);
  }
  return out;
}

move_task_info move_tasks::cancel(const std::string& handle) {
  std::lock_guard lock(mu_);
  for (auto& t : tasks_) {
    if (t->info.handle != handle) continue;
    if (t->info.status != "RUNNING") break;
    t->info.status = "CANCELLING";
    (void)t->thread.request_stop();
    return t->info;
  }
  throw error("ResourceNotFoundException", "The message move task does not exist or is not running.");
}

void move_tasks::cancel_all() noexcept {
  std::lock_guard lock(mu_);
  for (auto& t : tasks_) (void)t->thread.request_stop();
}

}  // namespace spool::serve::sqs
