// The engine behind a spool::database handle: its connection pool and the
// in-process wake-up signal that publishers raise for pollers of the same
// database. Thread safety: every member is safe from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/pool.hpp"
#include "engine/postgres/connection.hpp"
#include "engine/postgres/notifier.hpp"
#include "engine/sqlite/connection.hpp"
#include "spool/database.hpp"

namespace spool::detail {

// A counter that publishers bump and pollers wait on (the in-process part of
// wake-ups; a poller always falls back to its poll interval).
class wake_signal {
 public:
  void raise() {
    {
      std::lock_guard lock(mutex_);
      ++generation_;
    }
    cv_.notify_all();
  }
  [[nodiscard]] std::uint64_t generation() {
    std::lock_guard lock(mutex_);
    return generation_;
  }
  // Waits until the generation moves past seen, pred() is true, or the deadline.
  template <class Clock, class Duration, class Pred>
  void wait_until(std::uint64_t seen, const std::chrono::time_point<Clock, Duration>& deadline, Pred pred) {
    std::unique_lock lock(mutex_);
    cv_.wait_until(lock, deadline, [&] { return generation_ != seen || pred(); });
  }
  // Wakes every waiter so it re-checks its predicate (used by stop()).
  void poke() {
    { std::lock_guard lock(mutex_); }  // orders the caller's flag write before a waiter's re-check
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::uint64_t generation_ = 0;
};

class database_impl {
 public:
  database_impl(engine kind, std::string target, std::string display, database_options options);

  [[nodiscard]] engine kind() const noexcept { return kind_; }
  [[nodiscard]] const std::string& display() const noexcept { return display_; }
  [[nodiscard]] const std::string& target() const noexcept { return target_; }
  [[nodiscard]] const database_options& options() const noexcept { return options_; }

  pool<pg::detail::connection>& pg_pool();
  pool<sqlite::detail::connection>& sqlite_pool();
  // Closes the idle connections of this engine's pool (a queue that owns the
  // handle, on stop); leased ones close when returned.
  void clear_idle();
  // Opens pooled connections ahead of use until the pool holds min(n, pool
  // size); best effort, never throws (pool::prefill). Returns the count held.
  std::size_t prefill(std::size_t n) noexcept;
  // A fresh PostgreSQL connection (the pool's, health checks, LISTEN,
  // migrations), bounded by connect_timeout and, when the limits have a
  // deadline, by about that deadline (libpq's 2 s at least). The second form
  // takes connect_timeout in seconds.
  std::unique_ptr<pg::detail::connection> pg_connect(const call_options& limits) const;
  std::unique_ptr<pg::detail::connection> pg_connect(int connect_timeout_s) const;

  wake_signal& wake() noexcept { return wake_; }

  // PostgreSQL: makes the process's shared listener LISTEN on channel, so
  // NOTIFYs from any process raise wake(). Starts the listener on first use.
  void listen(const std::string& channel);
  // The shared listener's state (database::listener).
  [[nodiscard]] listener_info listener() noexcept;

  // PostgreSQL: listen(channel), and calls fn on the listener's thread with
  // each notification's payload on channel, or nullptr for "look now" (the
  // listener started listening: anything sent before may be lost). fn must
  // be short. Destroying the handle unsubscribes; once that returns, fn is
  // never called again. Other engines: an empty handle, fn never called.
  using subscriber = std::function<void(const std::string* payload)>;
  [[nodiscard]] std::shared_ptr<void> subscribe(const std::string& channel, subscriber fn);

 private:
  engine kind_;
  std::string target_;  // conninfo / file path, never logged
  std::string display_;
  database_options options_;
  std::unique_ptr<pool<pg::detail::connection>> pg_pool_;
  // This process's writers to the SQLite file queue here (connection.hpp).
  std::shared_ptr<sqlite::detail::write_gate> sqlite_write_gate_ =
      std::make_shared<sqlite::detail::write_gate>();
  std::unique_ptr<pool<sqlite::detail::connection>> sqlite_pool_;
  wake_signal wake_;
  std::mutex subscribers_mutex_;  // held while calling subscribers
  std::map<std::uint64_t, std::pair<std::string, subscriber>> subscribers_;
  std::uint64_t next_subscriber_ = 0;
  std::mutex listener_mutex_;
  std::unique_ptr<pg::detail::notifier> listener_;  // declared after wake_: stops first
};

}  // namespace spool::detail
