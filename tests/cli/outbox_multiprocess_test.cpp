// outbox.md §10 scenarios 9, 12 and 16 with real processes: relays reduced to
// their claims ($SPOOL_OUTBOX_CLAIMER, tests/support/outbox_claimer.cpp) in
// processes of their own, sharing one PostgreSQL database or one SQLite file
// with this test. tests/outbox/store_test.cpp holds the in-process versions;
// here a concurrent claimer has its own connections, a crash is a real SIGKILL
// and a skewed relay clock is a real one (faketime).
//
// Each claimer writes one flushed JSON line per claimed row, so the test waits
// on files and database state, bounded by generous timeouts; nothing asserts
// elapsed time.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"
#include "support/test_db.hpp"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using spool::test::cli_process;
namespace outbox = spool::outbox;

using spool::test::engine_kind;

std::string claimer_path() {
  const char* p = std::getenv("SPOOL_OUTBOX_CLAIMER");
  if (p == nullptr || *p == '\0')
    throw std::runtime_error("SPOOL_OUTBOX_CLAIMER is not set: run the tests through ctest");
  return p;
}

// The claimer's lines, parsed; none while the file does not exist yet.
std::vector<json> claims_in(const std::filesystem::path& p) {
  std::vector<json> out;
  std::istringstream in(spool::test::read_file(p));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

// Polls f until it holds or timeout passes; only a bound, so a failure cannot
// hang the suite.
bool wait_for(const std::function<bool()>& f, std::chrono::seconds timeout = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return f();
}

// "errc/reason" of the spool::error f throws, or "no error".
std::string failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const spool::error& e) {
    return std::string(spool::to_string(e.code())) + "/" + e.reason();
  }
  return "no error";
}

std::int64_t host_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class outbox_multiprocess : public ::testing::TestWithParam<engine_kind> {
 protected:
  void SetUp() override {
    uri_ = is_pg() ? spool::test::make_pg_database("cli_outbox_multiprocess") : dir_.sqlite_uri("shared.db");
    db_.emplace(spool::database::open(uri_));
    (void)outbox::migrate(*db_);
  }

  [[nodiscard]] bool is_pg() const { return GetParam() == engine_kind::postgres; }

  // Envelopes <prefix>0 … <prefix>{n-1}, committed in one transaction.
  void write_rows(const std::string& prefix, int n) {
    std::vector<outbox::envelope> batch;
    for (int i = 0; i < n; ++i) {
      outbox::envelope e;
      e.id = prefix + std::to_string(i);
      e.topic = "t";
      e.payload = "{}";
      batch.push_back(std::move(e));
    }
    outbox::writer_options o;
    o.max_batch_size = 1000;
    outbox::writer w(*db_, o);
    if (is_pg()) {
      spool::pg::tx tx(*db_);
      (void)w.insert_batch(tx, batch);
      tx.commit();
    } else {
      spool::sqlite::tx tx(*db_);
      (void)w.insert_batch(tx, batch);
      tx.commit();
    }
  }

  // The claimer's arguments for owner, writing to dir/<owner>.jsonl.
  [[nodiscard]] std::vector<std::string> claimer_args(const std::string& owner,
                                                      const std::vector<std::string>& more) const {
    std::vector<std::string> args{"--db", uri_, "--owner", owner, "--out", out_of(owner).string()};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  [[nodiscard]] std::filesystem::path out_of(const std::string& owner) const {
    return dir_.path() / (owner + ".jsonl");
  }
  [[nodiscard]] std::filesystem::path ready_of(const std::string& owner) const {
    return dir_.path() / (owner + ".ready");
  }

  // One row, every column as text, for "unchanged" checks.
  spool::row row_of(const std::string& id) {
    const auto r = db_->exec(is_pg() ? "SELECT * FROM outbox_messages WHERE id = $1"
                                     : "SELECT * FROM outbox_messages WHERE id = ?1",
                             {id});
    return r.empty() ? spool::row{} : r.at(0);
  }
  // A column of a row, as text.
  std::optional<std::string> field(const std::string& id, const std::string& column) {
    const auto r =
        db_->exec("SELECT " + column + " FROM outbox_messages WHERE id = " + (is_pg() ? "$1" : "?1"), {id});
    return r.empty() ? std::nullopt : r.at(0).at(0);
  }
  // The database clock in µs since the epoch. On SQLite the database clock is
  // the host clock of the process that reads it (outbox.md §4), here this one.
  std::int64_t database_now_us() {
    if (!is_pg()) return host_now_us();
    return std::stoll(
        *db_->exec("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint").at(0).at(0));
  }

  // Declared first, so it outlives every process the test started.
  spool::test::child_subreaper reaper_;
  spool::test::temp_dir dir_;
  std::string uri_;
  std::optional<spool::database> db_;
};

TEST_P(outbox_multiprocess,
       four_claimer_processes_taking_50_each_from_200_rows_get_200_distinct_rows) {  // §10.9
  write_rows("m", 200);
  // A start barrier and five rows per claim call, so the four processes'
  // claims overlap: unsynchronised, each finishes its 50 in less time than the
  // next takes to start.
  const auto go = dir_.path() / "go";
  std::vector<cli_process> claimers;
  claimers.reserve(4);
  for (int p = 0; p < 4; ++p) {
    const std::string owner = "p" + std::to_string(p);
    claimers.emplace_back(claimer_path(),
                          claimer_args(owner, {"--count", "50", "--batch", "5", "--ready",
                                               ready_of(owner).string(), "--go", go.string()}),
                          dir_.path(), owner);
  }
  ASSERT_TRUE(wait_for([&] {
    for (int p = 0; p < 4; ++p) {
      if (!std::filesystem::exists(ready_of("p" + std::to_string(p)))) return false;
    }
    return true;
  })) << claimers[0].err();
  std::ofstream(go).close();
  for (auto& c : claimers) {
    ASSERT_TRUE(wait_for([&] { return !c.running(); })) << c.err();
    // Already reaped: stop() sends nothing and returns the exit code.
    EXPECT_EQ(c.stop(SIGKILL), 0) << c.err();
  }

  std::map<std::string, int> times_claimed;
  std::set<std::string> tokens;
  for (int p = 0; p < 4; ++p) {
    const std::string owner = "p" + std::to_string(p);
    const auto claims = claims_in(out_of(owner));
    EXPECT_EQ(claims.size(), 50u) << owner;
    for (const auto& c : claims) {
      const std::string id = c["id"];
      ++times_claimed[id];
      tokens.insert(c["token"].get<std::string>());
      EXPECT_EQ(c["claim_count"], 1) << c.dump();
      EXPECT_EQ(c["owner"], owner) << c.dump();
      // What the process reported is what the database holds.
      EXPECT_EQ(field(id, "lease_owner"), owner) << id;
      EXPECT_EQ(field(id, is_pg() ? "lease_token::text" : "lease_token"), c["token"].get<std::string>())
          << id;
    }
  }
  EXPECT_EQ(times_claimed.size(), 200u);
  for (const auto& [id, n] : times_claimed) EXPECT_EQ(n, 1) << id << " was claimed " << n << " times";
  EXPECT_EQ(tokens.size(), 200u);
  EXPECT_EQ(db_->exec("SELECT count(*) FROM outbox_messages WHERE state = 'leased' AND claim_count = 1")
                .at(0)
                .at(0),
            "200");
}

TEST_P(outbox_multiprocess,
       a_killed_relays_expired_lease_is_reclaimed_and_its_old_token_is_lease_lost) {  // §10.12
  write_rows("r", 1);
  // A 2 s lease: long enough to outlive the kill on a loaded machine, short
  // enough that the reclaim below waits only seconds.
  cli_process doomed(claimer_path(), claimer_args("doomed", {"--hold", "--lease-ms", "2000"}), dir_.path(),
                     "doomed");
  ASSERT_TRUE(wait_for([&] { return claims_in(out_of("doomed")).size() == 1; })) << doomed.err();
  const auto held = claims_in(out_of("doomed")).at(0);
  ASSERT_EQ(held["id"], "r0");
  ASSERT_EQ(held["claim_count"], 1);
  const outbox::lease_ref old{"r0", held["token"].get<std::string>()};

  // The crash: the relay dies holding its lease and records nothing more.
  EXPECT_EQ(doomed.kill_group(SIGKILL), 128 + SIGKILL) << doomed.err();
  EXPECT_EQ(field("r0", "state"), "leased");
  EXPECT_EQ(field("r0", "lease_owner"), "doomed");

  // Claims see the row only once its lease has expired on the database clock.
  outbox::store store(*db_);
  std::vector<outbox::claimed_message> got;
  ASSERT_TRUE(wait_for([&] {
    got = store.claim("rescuer", 1, 60s);
    return !got.empty();
  }));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].ref.id, "r0");
  EXPECT_NE(got[0].ref.token, old.token);
  EXPECT_EQ(got[0].message.claim_count, 2u);
  EXPECT_EQ(got[0].owner, "rescuer");

  // The dead relay's token is fenced off and its refused calls change nothing.
  const auto before = row_of("r0");
  EXPECT_EQ(failure_of([&] { store.mark_delivered(old); }), "lease_lost/lease_lost");
  EXPECT_EQ(failure_of([&] { (void)store.extend_lease(old, 60s); }), "lease_lost/lease_lost");
  EXPECT_EQ(row_of("r0"), before);

  store.mark_delivered(got[0].ref);
  EXPECT_EQ(field("r0", "state"), "delivered");
}

TEST_P(outbox_multiprocess,
       a_relay_clock_24_h_ahead_still_schedules_a_30_s_retry_30_s_after_database_now) {  // §10.16
  write_rows("s", 1);
  // faketime shifts every clock the claimer reads (LD_PRELOAD of libfaketime);
  // scripts/install-deps.sh installs it. Under AddressSanitizer the preload
  // comes before the ASan runtime, which ASan refuses unless told not to check.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options =
      "ASAN_OPTIONS=" + (asan != nullptr && *asan != '\0' ? std::string(asan) + ":" : "") +
      "verify_asan_link_order=0";
  ASSERT_EQ(std::system("command -v faketime >/dev/null 2>&1"), 0)
      << "faketime is not installed: run scripts/install-deps.sh";
  cli_process skewed("/usr/bin/env",
                     {asan_options, "faketime", "-f", "+24h", claimer_path(), "--db", uri_, "--owner",
                      "skewed", "--out", out_of("skewed").string(), "--retry-after", "30"},
                     dir_.path(), "skewed");
  ASSERT_TRUE(wait_for([&] { return !skewed.running(); })) << skewed.err();
  ASSERT_EQ(skewed.stop(SIGKILL), 0) << skewed.err();  // already reaped: sends nothing

  // The skew took effect: the claimer's own clock read a day ahead.
  const auto claims = claims_in(out_of("skewed"));
  ASSERT_EQ(claims.size(), 1u);
  const double skew_s =
      static_cast<double>(claims[0]["host_now_us"].get<std::int64_t>() - database_now_us()) / 1e6;
  ASSERT_NEAR(skew_s, 24 * 3600, 300);

  EXPECT_EQ(field("s0", "state"), "pending");
  EXPECT_EQ(field("s0", "failure_count"), "1");
  EXPECT_EQ(field("s0", "last_error_code"), "test.retry");
  if (is_pg()) {
    // The retry was scheduled on the server's clock: 30 s after the retry's
    // own time, and (checked right after the claimer exited) about 30 s from
    // now, not a day.
    const auto r = db_->exec(
        "SELECT extract(epoch FROM available_at - updated_at), extract(epoch FROM available_at - "
        "clock_timestamp()) "
        "FROM outbox_messages WHERE id = 's0'");
    EXPECT_NEAR(std::stod(*r.at(0).at(0)), 30, 5);
    const double ahead_of_now_s = std::stod(*r.at(0).at(1));
    EXPECT_GT(ahead_of_now_s, 0);
    EXPECT_LE(ahead_of_now_s, 35);
  } else {
    // SQLite has no server: its database clock is the host clock Spool reads
    // in the writing process (outbox.md §4), so the claimer's skew is the
    // database's for that write. The delay is still counted from that same
    // reading, never added to a second clock.
    const auto available_at = std::stoll(*field("s0", "available_at"));
    const auto updated_at = std::stoll(*field("s0", "updated_at"));
    EXPECT_NEAR(static_cast<double>(available_at - updated_at) / 1e6, 30, 5);
    EXPECT_NEAR(static_cast<double>(updated_at - host_now_us()) / 1e6, 24 * 3600, 300);
  }
}

INSTANTIATE_TEST_SUITE_P(engines, outbox_multiprocess,
                         ::testing::Values(engine_kind::postgres, engine_kind::sqlite), [](const auto& info) {
                           return info.param == engine_kind::postgres ? "postgres" : "sqlite";
                         });

}  // namespace
