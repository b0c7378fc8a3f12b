// The relay's concurrent claim rounds on both engines (outbox.md §7 rules 1
// and 5): a relay whose leases hold several claims runs claim rounds at once,
// as the library loop's workers do, and keeps the rules one round kept. No
// timing assertions: waits are bounded and end on states and events.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "outbox_fixture.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"
#include "support/eventually.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

class outbox_relay_claimers : public outbox_conformance {
 protected:
  // Room for four claims of ten beside each other, four sink calls.
  static relay_options four_claims() {
    relay_options o;
    o.owner = "claimers-test";
    o.max_in_flight = 40;
    o.claim_batch = 10;
    o.sink_concurrency = 4;
    o.lease_duration = std::chrono::seconds(30);
    o.poll_interval = std::chrono::milliseconds(20);
    o.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(1)};
    o.shutdown_grace = std::chrono::seconds(30);
    return o;
  }
  void write_rows(const std::string& prefix, int n) {
    std::vector<envelope> rows;
    for (int i = 0; i < n; ++i) rows.push_back(env(prefix + std::to_string(1000 + i)));
    write(rows);
  }
};

TEST_P(outbox_relay_claimers,
       a_relay_with_room_for_several_claims_runs_them_at_once_and_delivers_each_row_once) {
  write_rows("c", 80);
  // The first claim that got rows is held in the store's observer (its rows
  // are leased, not yet the relay's) until another claim finishes: with one
  // claimer at a time that never happens and the wait ends after a minute.
  std::mutex mu;
  std::condition_variable cv;
  int finished_with_rows = 0;
  bool held_one = false, overlapped = false;
  store_options so;
  so.observer = [&](const event& e) {
    if (e.op != operation::claim || !e.ok || e.count == 0) return;
    std::unique_lock lock(mu);
    ++finished_with_rows;
    cv.notify_all();
    if (held_one) return;
    held_one = true;
    overlapped = cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished_with_rows >= 2; });
  };
  store st(*db_, so);
  std::atomic<std::int64_t> max_leased{0};
  std::mutex seen_mu;
  std::multiset<std::string> seen;
  relay r(st, make_callback_sink([&](const claimed_message& m, std::stop_token) {
            {
              std::lock_guard lock(seen_mu);
              seen.insert(m.message.id);
            }
            raise_to(max_leased, count("state = 'leased'"));
            return sink_outcome::delivered();
          }),
          four_claims());
  r.start();
  ASSERT_TRUE(eventually([&] { return count("state = 'delivered'") == 80; }));
  r.stop();
  {
    std::lock_guard lock(mu);
    EXPECT_TRUE(overlapped) << "no second claim finished while the first was held";
  }
  EXPECT_LE(max_leased.load(), 40);  // never more leases than max_in_flight
  EXPECT_EQ(seen.size(), 80u);
  for (const auto& id : seen) EXPECT_EQ(seen.count(id), 1u) << id;
  const auto m = r.metrics();
  EXPECT_EQ(m.claimed, 80u);
  EXPECT_EQ(m.delivered, 80u);
  EXPECT_EQ(m.lease_lost, 0u);
  EXPECT_EQ(m.in_flight, 0);
}

TEST_P(outbox_relay_claimers, with_several_claimers_a_half_open_breaker_lets_out_one_probe_row_at_a_time) {
  write_rows("p", 1);
  std::mutex mu;
  std::vector<std::size_t> claims;  // rows per finished claim round, in order
  store_options so;
  so.observer = [&](const event& e) {
    if (e.op != operation::claim) return;
    std::lock_guard lock(mu);
    claims.push_back(e.count);
  };
  store st(*db_, so);
  std::atomic<bool> marked{false};
  std::atomic<int> running{0}, max_running_after_mark{0};
  auto o = four_claims();
  o.max_attempts = 10000;
  o.max_claims = 1000000;
  o.breaker = {1, std::chrono::milliseconds(1), std::chrono::milliseconds(2)};
  relay r(st, make_callback_sink([&](const claimed_message&, std::stop_token) {
            const int now = ++running;
            if (marked) raise_to(max_running_after_mark, now);
            std::this_thread::sleep_for(
                std::chrono::milliseconds(2));  // a probe overlapping another would be seen
            --running;
            return sink_outcome::transient("down", "sink outage");  // never closes the breaker
          }),
          o);
  r.start();
  // The breaker has opened and every round asked for so far has finished:
  // any round from here on is asked while the breaker is open or half-open.
  std::size_t mark = 0;
  ASSERT_TRUE(eventually([&] {
    const auto m = r.metrics();
    std::lock_guard lock(mu);
    if (m.breaker == breaker_state::closed || m.claims != claims.size()) return false;
    mark = claims.size();
    return true;
  }));
  marked = true;
  write_rows("q", 30);  // plenty for a claim of ten, were one asked for
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return std::count(claims.begin() + static_cast<std::ptrdiff_t>(mark), claims.end(), std::size_t{1}) >= 5;
  }));
  r.stop();
  std::lock_guard lock(mu);
  for (std::size_t i = mark; i < claims.size(); ++i) EXPECT_LE(claims[i], 1u) << "claim round " << i;
  EXPECT_LE(max_running_after_mark.load(), 1);
  EXPECT_EQ(count("state = 'delivered'"), 0);
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_relay_claimers);

}  // namespace
}  // namespace spool::test
