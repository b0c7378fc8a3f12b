// SQLite's wake-ups for relays (outbox.md §7 rule 8): SQLite has no NOTIFY,
// so a thread turns this process's commits on the database (the wake signal
// every spool::tx commit raises) into calls of fn until destroyed. Other
// processes' commits are not heard; relays also poll.
// Thread safety: fn runs on the watcher's own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "engine/database_impl.hpp"
#include "spool/database.hpp"

namespace spool::outbox::detail {

class commit_watcher {
 public:
  commit_watcher(database db, std::function<void(bool)> fn)
      : db_(std::move(db)),
        fn_(std::move(fn)),
        seen_(db_.impl().wake().generation()),
        thread_([this] { watch(); }) {}
  ~commit_watcher() {
    stopped_ = true;
    db_.impl().wake().poke();
    thread_.join();
  }
  commit_watcher(const commit_watcher&) = delete;
  commit_watcher& operator=(const commit_watcher&) = delete;

 private:
  void watch() {
    auto& wake = db_.impl().wake();
    auto seen = seen_;  // read before the subscription returned: no commit after it is missed
    while (!stopped_) {
      wake.wait_until(seen, std::chrono::steady_clock::now() + std::chrono::seconds(1),
                      [&] { return stopped_.load(); });
      const auto now = wake.generation();
      if (now != seen && !stopped_) fn_(true);
      seen = now;
    }
  }
  database db_;
  std::function<void(bool)> fn_;
  std::atomic<bool> stopped_{false};
  std::uint64_t seen_;
  std::thread thread_;
};

}  // namespace spool::outbox::detail
