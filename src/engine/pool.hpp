// A bounded, thread-safe connection pool shared by both engines.
// acquire() hands a connection out exclusively; the lease gives it back when
// it dies. Unhealthy connections are dropped on return and replaced on the
// next acquire, which is how the pool reconnects after a server restart.
// Thread safety: every member is safe to call from any thread.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

#include "common/call_guard.hpp"
#include "spool/call_options.hpp"
#include "spool/error.hpp"

namespace spool::detail {

template <class Conn>
class pool {
 public:
  // Opens a connection; the call's limits bound the connect (a connect
  // cannot outlive the deadline of the call that needed it).
  using factory = std::function<std::unique_ptr<Conn>(const call_options&)>;
  using health = std::function<bool(Conn&)>;

  class lease {
   public:
    lease(pool* owner, std::unique_ptr<Conn> conn) : owner_(owner), conn_(std::move(conn)) {}
    lease(lease&& other) noexcept : owner_(other.owner_), conn_(std::move(other.conn_)) {
      other.owner_ = nullptr;
    }
    lease& operator=(lease&&) = delete;
    lease(const lease&) = delete;
    ~lease() {
      if (owner_ != nullptr) owner_->give_back(std::move(conn_));
    }
    Conn& operator*() const noexcept { return *conn_; }
    Conn* operator->() const noexcept { return conn_.get(); }
    // Drops the connection instead of returning it (after a fatal error).
    void discard() noexcept { conn_.reset(); }

   private:
    pool* owner_;
    std::unique_ptr<Conn> conn_;
  };

  pool(std::size_t size, factory make, health check)
      : size_(size), make_(std::move(make)), check_(std::move(check)) {}

  // Waits for a free slot, then returns an idle connection or a new one.
  // Errors: whatever the factory throws (unavailable when connecting fails);
  // unavailable (deadline_exceeded / cancelled) when the call's limits end
  // the wait for a free slot.
  lease acquire(const call_options& limits = {}) {
    check_call(limits, "waiting for a connection");
    std::unique_lock lock(mutex_);
    wait_within(
        cv_, lock, limits, [&] { return !idle_.empty() || in_use_ + idle_.size() < size_; },
        "waiting for a connection");
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      ++in_use_;
      return lease(this, std::move(conn));
    }
    ++in_use_;  // reserve the slot, then connect without holding the lock
    lock.unlock();
    try {
      return lease(this, make_(limits));
    } catch (...) {
      lock.lock();
      --in_use_;
      cv_.notify_one();
      throw;
    }
  }

  // Opens idle connections until the pool holds min(n, size()) (idle and
  // leased), one at a time, so that a runtime starting does not pay a
  // connect on each of its first calls. Best effort: stops at the first
  // connect that fails (the next acquire tries again) and never throws.
  // Returns the connections the pool holds.
  std::size_t prefill(std::size_t n) noexcept {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (in_use_ + idle_.size() >= std::min(n, size_)) return in_use_ + idle_.size();
        ++in_use_;  // reserve the slot while connecting
      }
      std::unique_ptr<Conn> conn;
      try {
        conn = make_(call_options{});
      } catch (...) {
        conn.reset();
      }
      std::lock_guard lock(mutex_);
      --in_use_;
      cv_.notify_one();
      if (!conn) return in_use_ + idle_.size();
      idle_.push_back(std::move(conn));
    }
  }

  // Closes idle connections (used by stop and shutdown).
  void clear_idle() {
    std::vector<std::unique_ptr<Conn>> doomed;
    {
      std::lock_guard lock(mutex_);
      doomed.swap(idle_);
    }
    cv_.notify_all();
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  void give_back(std::unique_ptr<Conn> conn) {
    bool keep = conn && check_(*conn);
    std::unique_ptr<Conn> doomed;
    {
      std::lock_guard lock(mutex_);
      --in_use_;
      if (keep) {
        idle_.push_back(std::move(conn));
      } else {
        doomed = std::move(conn);
      }
    }
    cv_.notify_one();
  }

  const std::size_t size_;
  factory make_;
  health check_;
  std::mutex mutex_;
  std::condition_variable_any cv_;  // _any: waits can end on a stop_token
  std::vector<std::unique_ptr<Conn>> idle_;
  std::size_t in_use_ = 0;
};

}  // namespace spool::detail
