// The relay tests' fixture (relay_test.cpp, relay_recovery_test.cpp): a
// store whose observer counts each claim, extension and delivery, and the
// relay options scaled for tests. In a named namespace, so that both files
// share one fixture type for the parameterised suite.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

#include "outbox_fixture.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"
#include "support/eventually.hpp"

namespace spool::test {

// The relay tests name the outbox API unqualified, as its own files do.
using namespace spool::outbox;

// A one-shot gate the test opens.
class gate {
 public:
  void open() {
    std::lock_guard lock(m_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until opened (or the stop token, or a minute); true when opened.
  bool wait(const std::stop_token& stop = {}) {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, stop, std::chrono::seconds(60), [&] { return open_; });
  }

 private:
  std::mutex m_;
  std::condition_variable_any cv_;
  bool open_ = false;
};

class outbox_relay : public outbox_conformance {
 protected:
  void SetUp() override {
    outbox_conformance::SetUp();
    store_options so;
    so.observer = [this](const event& e) {
      if (!e.ok) return;
      std::lock_guard lock(events_mutex_);
      if (e.op == operation::extend) extend_counts_.push_back(e.count);
      if (e.op == operation::claim) claim_counts_.push_back(e.count);
      if (e.op == operation::deliver) deliver_counts_.push_back(e.count);
    };
    st_.emplace(*db_, so);
  }

  // Short leases and scaled-down backoff: the defaults scaled for tests.
  static relay_options fast() {
    relay_options o;
    o.owner = "relay-test";
    o.max_in_flight = 4;
    o.lease_duration = std::chrono::seconds(10);
    o.poll_interval = std::chrono::milliseconds(20);
    o.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(1)};
    o.shutdown_grace = std::chrono::seconds(30);
    return o;
  }
  static std::shared_ptr<sink> deliver_all(std::atomic<int>* calls = nullptr) {
    return make_callback_sink([calls](const claimed_message&, std::stop_token) {
      if (calls) ++*calls;
      return sink_outcome::delivered();
    });
  }
  std::string column(const std::string& id, const std::string& col) {
    const auto r =
        db_->exec("SELECT " + col + " FROM outbox_messages WHERE id = " + (is_pg() ? "$1" : "?1"), {id});
    return r.empty() || !r[0][0] ? "" : *r[0][0];
  }
  std::vector<std::size_t> extend_counts() {
    std::lock_guard lock(events_mutex_);
    return extend_counts_;
  }
  std::vector<std::size_t> claim_counts() {
    std::lock_guard lock(events_mutex_);
    return claim_counts_;
  }
  std::vector<std::size_t> deliver_counts() {
    std::lock_guard lock(events_mutex_);
    return deliver_counts_;
  }
  // run_once until it claims a row (a retried row is claimable after its backoff).
  std::size_t run_once_until_claimed(relay& r) {
    std::size_t got = 0;
    EXPECT_TRUE(eventually([&] { return (got = r.run_once()) > 0; }));
    return got;
  }

  std::optional<store> st_;
  std::mutex events_mutex_;
  std::vector<std::size_t> extend_counts_, claim_counts_, deliver_counts_;
};

}  // namespace spool::test
