// The fault workload's shared parts (workload.cpp, workload_threads.cpp,
// workload_verify.cpp): its limits, the messages it sends, set arithmetic for
// the verdict, and the state its threads record under one mutex.
#pragma once

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "faults/faults_support.hpp"

namespace spool::test::faults {

using namespace std::chrono_literals;

enum class outcome { ok, unavailable, in_doubt, unexpected };

constexpr auto call_budget = 10s;  // every queue call's deadline: a call never hangs
constexpr auto visibility = std::chrono::seconds(3);
constexpr auto outbox_lease = std::chrono::seconds(3);
inline const std::string op_type = "fault";

inline mq::message mq_message(const std::string& id) {
  mq::message m;
  m.id = id;
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.test/faults";
  return m;
}

inline outbox::envelope envelope_for(const std::string& id) {
  outbox::envelope e;
  e.id = id;
  e.topic = "faults";
  e.payload = "p";
  return e;
}

inline std::string join_some(const std::set<std::string>& ids, std::size_t n = 5) {
  std::string out;
  for (const auto& id : ids) {
    if (n-- == 0) break;
    out += (out.empty() ? "" : ", ") + id;
  }
  return out;
}

inline std::set<std::string> minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const auto& x : a)
    if (!b.count(x)) out.insert(x);
  return out;
}

inline std::set<std::string> both(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const auto& x : a)
    if (b.count(x)) out.insert(x);
  return out;
}

inline std::set<std::string> either(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// Everything the threads record, under one mutex.
struct workload::state {
  std::mutex m;
  call_tally mq_publish, ops_enqueue, outbox_insert, mq_poll, mq_ack, ops_dequeue, ops_ack, outbox_claim,
      outbox_deliver, recover;
  // Producers: acknowledged, in doubt, and definitely not committed
  // (unavailable, or an outbox transaction that failed before COMMIT).
  std::set<std::string> mq_ok, mq_doubt, mq_absent;
  std::set<std::string> ops_ok, ops_doubt, ops_absent;
  std::set<std::string> outbox_ok, outbox_doubt, outbox_absent;
  // Consumers.
  std::set<std::string> mq_delivered, mq_acked, mq_ack_doubt, mq_drained;
  std::set<std::string> ops_delivered, ops_acked, ops_ack_doubt, ops_drained;
  std::set<std::string> outbox_claimed, outbox_delivered, outbox_deliver_doubt, outbox_drained;
  std::vector<std::string> mq_redelivered, ops_redelivered, outbox_redelivered;
  // Successes per worker: mq/ops/outbox producers, mq/ops/outbox consumers.
  std::array<std::atomic<std::uint64_t>, 6> progress{};

  // Runs f and records its outcome in t. failed_before is the worker's
  // previous outcome, for counting recoveries.
  // lease_lost_allowed: a lease that lapsed before its outcome was recorded
  // (nothing changed; the row is claimed again) counts as unavailable.
  outcome attempt(call_tally& t, bool& failed_before, const std::function<void()>& f,
                  bool lease_lost_allowed = false) {
    outcome o = outcome::ok;
    std::string reason, what;
    try {
      f();
    } catch (const spool::error& e) {
      o = e.code() == errc::unavailable                        ? outcome::unavailable
          : e.code() == errc::in_doubt                         ? outcome::in_doubt
          : e.code() == errc::lease_lost && lease_lost_allowed ? outcome::unavailable
                                                               : outcome::unexpected;
      reason = fmt::format("{}/{}", to_string(e.code()), e.reason());
      what = e.what();
      if (o == outcome::unavailable && !e.retryable() && e.code() != errc::lease_lost)
        o = outcome::unexpected;
    } catch (const std::exception& e) {
      o = outcome::unexpected;
      reason = "std::exception";
      what = e.what();
    }
    std::lock_guard lock(m);
    switch (o) {
      case outcome::ok:
        ++t.ok;
        if (failed_before) ++t.recoveries;
        break;
      case outcome::unavailable:
        ++t.unavailable;
        break;
      case outcome::in_doubt:
        ++t.in_doubt;
        break;
      case outcome::unexpected:
        if (t.unexpected.size() < 20) t.unexpected.push_back(fmt::format("{}: {}", reason, what));
        break;
    }
    if (!reason.empty()) ++t.reasons[reason];
    failed_before = o != outcome::ok;
    return o;
  }
};

}  // namespace spool::test::faults
