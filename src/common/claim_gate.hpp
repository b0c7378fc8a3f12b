// A limit on how many batch claims of one queue handle run at once.
//
// Claims that take many rows with FOR UPDATE SKIP LOCKED all start their walk
// at the head of the same index. A claim that starts while others hold their
// rows walks past every one of them (a heap visit and a lock test each)
// before it finds its own, so claims beyond a few at once add work to the
// database and not throughput: on 2 cores the mq batch-100 drain at 16
// workers was 24 % faster with at most 4 claims at once, on average over six
// rounds (docs/BENCHMARKS.md, round 13). Claims of a few rows are not limited: they
// are bound by their commit's flush, which concurrent commits share.
// Thread safety: safe to share; enter() may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "common/call_guard.hpp"
#include "spool/call_options.hpp"
#include "spool/error.hpp"

namespace spool::detail {

class claim_gate {
 public:
  // limit 0: no limit.
  explicit claim_gate(std::size_t limit) : limit_(limit) {}

  // Holds one of the gate's places for its lifetime (or none, when the gate
  // let the claim through without one).
  class permit {
   public:
    permit() = default;
    explicit permit(claim_gate* g) : gate_(g) {}
    permit(permit&& o) noexcept : gate_(o.gate_) { o.gate_ = nullptr; }
    permit& operator=(permit&&) = delete;
    permit(const permit&) = delete;
    permit& operator=(const permit&) = delete;
    ~permit() {
      if (gate_ != nullptr) gate_->leave();
    }

   private:
    claim_gate* gate_ = nullptr;
  };

  // Waits for a place for a claim of `rows` rows; claims below
  // `smallest_limited` rows pass at once. Errors: unavailable
  // (deadline_exceeded / cancelled) when the call's limits end the wait;
  // nothing has been sent then.
  [[nodiscard]] permit enter(std::size_t rows, const call_options& call) {
    if (limit_ == 0 || rows < smallest_limited) return {};
    check_call(call, "waiting for a claim of the queue");
    std::unique_lock lock(mu_);
    wait_within(
        cv_, lock, call, [&] { return running_ < limit_; }, "waiting for a claim of the queue");
    ++running_;
    return permit(this);
  }

  // Claims of fewer rows are never held back (their cost is the commit's
  // flush, not the walk).
  static constexpr std::size_t smallest_limited = 32;

 private:
  void leave() {
    {
      std::lock_guard lock(mu_);
      --running_;
    }
    cv_.notify_one();
  }

  const std::size_t limit_;
  std::mutex mu_;
  std::condition_variable_any cv_;  // _any: waits can end on a stop_token
  std::size_t running_ = 0;
};

}  // namespace spool::detail
