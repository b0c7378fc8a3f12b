// Crash tests with real processes for the op queue's worker pools and the
// outbox's relays: producers (spool_chaos_actor) and the real CLI workers
// (`spool ops work`, `spool relay --sink exec:…`) run as separate processes
// while the supervisor SIGKILLs one at seeded random moments and restarts it.
// The workers' commands log each delivery; the delivery-log checker and the
// database then must show: nothing lost, every op done / envelope delivered,
// no delivery that was not a claim of its own (deliveries ≤ attempts or
// claim_count; the same attempt or claim count twice is a double claim), the
// table's final state agreeing with the log (every op done, every envelope
// delivered), SQLite's integrity_check ok, and for the outbox each ordering
// key, written by both writers, first delivered in the store's commit order.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>

#include "chaos/supervisor.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/tx.hpp"
#include "support/delivery_log.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;

std::string env_path(const char* name) {
  const char* p = std::getenv(name);
  if (p == nullptr) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return p;
}

// A script a CLI worker runs per delivery (`--exec sh SCRIPT …` or the
// relay's `exec:sh SCRIPT …`): it drains stdin and appends one line
// "H <id> <count> <ns>" to LOG with a single write. Arguments: LOG, then the
// names of the environment variables holding the id and the claim count.
std::filesystem::path write_logging_script(const std::filesystem::path& dir) {
  const auto path = dir / "log_delivery.sh";
  std::ofstream(path) << "cat > /dev/null\n"
                         "eval \"id=\\${$2}\"; eval \"n=\\${$3}\"\n"
                         "printf 'H\\t%s\\t%s\\t%s\\n' \"$id\" \"$n\" \"$(date +%s%N)\" >> \"$1\"\n";
  return path;
}

class chaos_ops_outbox : public ::testing::TestWithParam<engine> {
 protected:
  void SetUp() override {
    seed_ = chaos_seed();
    std::cout << "chaos seed " << seed_ << " for " << current_test()
              << " (replay with SPOOL_CHAOS_SEED=" << seed_ << ")\n";
    RecordProperty("chaos_seed", std::to_string(seed_));
    uri_ = is_pg() ? make_pg_database("chaos_ops_outbox") : dir_.sqlite_uri("chaos.db");
    db_.emplace(database::open(uri_));
    spool::migrate(*db_);
    std::filesystem::create_directories(logs());
  }
  [[nodiscard]] bool is_pg() const { return GetParam() == engine::postgres; }
  [[nodiscard]] std::filesystem::path logs() const { return dir_.path() / "logs"; }
  std::int64_t count(const std::string& sql) { return std::stoll(*db_->exec(sql).at(0).at(0)); }
  // id → the column, for every row of a table.
  std::map<std::string, std::int64_t> per_id(const std::string& sql) {
    std::map<std::string, std::int64_t> out;
    for (const auto& r : db_->exec(sql)) out[*r[0]] = std::stoll(*r[1]);
    return out;
  }
  // Deliveries of an id beyond its claims would be a delivery without a claim of its own.
  static long deliveries_beyond_claims(const std::vector<delivery_record>& ds,
                                       const std::map<std::string, std::int64_t>& claims) {
    std::map<std::string, std::int64_t> seen;
    for (const auto& d : ds) ++seen[d.id];
    long bad = 0;
    for (const auto& [id, n] : seen) {
      const auto it = claims.find(id);
      if (it == claims.end() || n > it->second) ++bad;
    }
    return bad;
  }
  static void stop_workers(std::vector<supervised>& slots) {
    for (const auto& f : stop_when_ready(slots)) ADD_FAILURE() << f;
  }
  // id → state column, for every row.
  std::map<std::string, std::string> states(const std::string& sql) {
    std::map<std::string, std::string> out;
    for (const auto& r : db_->exec(sql)) out[*r[0]] = r[1].value_or("NULL");
    return out;
  }
  void expect_sqlite_intact() {
    if (!is_pg()) EXPECT_EQ(sqlite_integrity(dir_.path() / "chaos.db"), "ok");
  }
  template <class Pred>
  bool eventually(Pred pred, std::chrono::minutes limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(200ms);
    }
    return true;
  }

  std::uint64_t seed_ = 0;
  temp_dir dir_;
  std::string uri_;
  std::optional<database> db_;
};

TEST_P(chaos_ops_outbox,
       sigkilled_enqueuers_and_worker_pools_lose_no_op_and_run_each_only_on_a_claim_of_its_own) {
  std::mt19937_64 rng(seed_);
  constexpr int producers = 2, workers = 3, per_producer = 5000;  // 10,000 ops
  const auto script = write_logging_script(dir_.path());
  std::vector<supervised> slots;
  for (int p = 0; p < producers; ++p) {
    const std::string name = "p" + std::to_string(p);
    slots.push_back({name,
                     env_path("SPOOL_CHAOS_ACTOR"),
                     {"enqueue", "--db", uri_, "--name", name, "--count", std::to_string(per_producer),
                      "--batch", "10", "--log", (logs() / ("ops-" + name + ".log")).string()},
                     true});
  }
  for (int w = 0; w < workers; ++w) {
    const std::string name = "w" + std::to_string(w);
    slots.push_back({name,
                     env_path("SPOOL_CLI"),
                     {"ops",
                      "work",
                      "--db",
                      uri_,
                      "--type",
                      "chaos",
                      "--concurrency",
                      "4",
                      "--poll-interval",
                      "50ms",
                      "--heartbeat-interval",
                      "500ms",
                      "--lease-timeout",
                      "2s",
                      "--rescue-interval",
                      "500ms",
                      "--owner",
                      name,
                      "--log-level",
                      "info",
                      "--exec",
                      "sh " + script.string() + " " + (logs() / ("ops-" + name + ".log")).string() +
                          " SPOOL_OP_ID SPOOL_OP_ATTEMPTS"},
                     false,
                     "ops work: started"});
  }
  const std::string open_ops = "SELECT count(*) FROM ops_queue WHERE status <> 'done'";
  const auto chaos = run_chaos(
      slots, dir_.path(), rng, [&] { return count(open_ops) < producers * per_producer / 50; }, 15min);
  EXPECT_TRUE(chaos.failures.empty()) << chaos.failures.front();
  ASSERT_TRUE(chaos.done) << "the enqueuers did not finish or the workers did not drain in time";
  // No more kills: ops a killed pool held come back once their lease has no heartbeat.
  EXPECT_TRUE(eventually([&] { return count(open_ops) == 0; }, 5min)) << count(open_ops) << " ops not done";
  stop_workers(slots);

  std::vector<produced_record> produced;
  std::vector<delivery_record> deliveries;
  read_logs(logs(), "ops-", produced, deliveries);
  // Each H carries the attempt of its claim: the same attempt twice is a double claim.
  auto report = check_deliveries(produced, deliveries);
  check_final_state(report, produced, states("SELECT id, status FROM ops_queue"), "done", true);
  expect_sqlite_intact();
  const long beyond = deliveries_beyond_claims(deliveries, per_id("SELECT id, attempts FROM ops_queue"));
  std::cout << "chaos ops (" << (is_pg() ? "postgres" : "sqlite") << "): " << chaos.kills << " SIGKILLs ("
            << chaos.kills_of_finite << " of enqueuers); " << report.summary()
            << "; deliveries beyond claims " << beyond << "\n";
  RecordProperty("report", report.summary());
  EXPECT_GT(chaos.kills, 0);
  EXPECT_EQ(report.produced, producers * per_producer);
  EXPECT_EQ(count("SELECT count(*) FROM ops_queue"), producers * per_producer);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(beyond, 0) << "an op ran more often than it was claimed";
}

TEST_P(chaos_ops_outbox, sigkilled_writers_and_relays_lose_no_envelope_and_keep_each_key_in_commit_order) {
  std::mt19937_64 rng(seed_);
  // 6,000 envelopes in 10 keys that both writers share, on PostgreSQL; 3,000
  // on SQLite, where every delivery waits for its fsync behind the other
  // processes' commits.
  constexpr int producers = 2, relays = 3, keys = 10;
  const int per_producer = is_pg() ? 3000 : 1500;
  const auto script = write_logging_script(dir_.path());
  std::vector<supervised> slots;
  for (int p = 0; p < producers; ++p) {
    const std::string name = "p" + std::to_string(p);
    slots.push_back({name,
                     env_path("SPOOL_CHAOS_ACTOR"),
                     {"write", "--db", uri_, "--name", name, "--keys", std::to_string(keys), "--count",
                      std::to_string(per_producer), "--batch", "10", "--log",
                      (logs() / ("obx-" + name + ".log")).string()},
                     true});
  }
  for (int r = 0; r < relays; ++r) {
    const std::string name = "r" + std::to_string(r);
    slots.push_back({name,
                     env_path("SPOOL_CLI"),
                     {"relay", "--db", uri_, "--serialization", "key", "--concurrency", "8", "--lease", "4s",
                      "--poll-interval", "100ms", "--owner", name, "--shutdown-grace", "5s", "--log-level",
                      "info", "--sink",
                      "exec:sh " + script.string() + " " + (logs() / ("obx-" + name + ".log")).string() +
                          " SPOOL_OUTBOX_ID SPOOL_OUTBOX_CLAIM_COUNT"},
                     false,
                     "relay: started"});
  }
  const std::string open_rows = "SELECT count(*) FROM outbox_messages WHERE state <> 'delivered'";
  // Slower kills than for the queues: a killed relay's keys wait out its 4 s
  // leases (shorter ones expire under SQLite's fsync queue on a loaded
  // machine), so killing every few hundred milliseconds would stall every key.
  const auto chaos =
      run_chaos(slots, dir_.path(), rng, [&] { return count(open_rows) < producers * per_producer / 50; },
                15min, {400ms, 1500ms});
  EXPECT_TRUE(chaos.failures.empty()) << chaos.failures.front();
  ASSERT_TRUE(chaos.done) << "the writers did not finish or the relays did not drain in time";
  EXPECT_TRUE(eventually([&] { return count(open_rows) == 0; }, 5min))
      << count(open_rows) << " not delivered";
  stop_workers(slots);

  std::vector<produced_record> produced;
  std::vector<delivery_record> deliveries;
  read_logs(logs(), "obx-", produced, deliveries);
  // Both writers write every key, so no writer's log knows a key's commit
  // order: it is the store's position, (xact_id, seq) on PostgreSQL, seq on
  // SQLite (outbox.md §3.2), which the relay must follow.
  std::map<std::string, std::pair<std::string, std::int64_t>> rank;
  for (const auto& r :
       db_->exec(is_pg() ? "SELECT id, ordering_key, row_number() OVER (PARTITION BY ordering_key "
                           "ORDER BY xact_id, seq) FROM outbox_messages"
                         : "SELECT id, ordering_key, row_number() OVER (PARTITION BY ordering_key "
                           "ORDER BY seq) FROM outbox_messages")) {
    rank[*r[0]] = {*r[1], std::stoll(*r[2])};
  }
  ASSERT_EQ(rank.size(), static_cast<std::size_t>(producers * per_producer));
  auto report = check_deliveries(resequenced(produced, rank), deliveries, {.group_order = true});
  check_final_state(report, produced, states("SELECT id, state FROM outbox_messages"), "delivered", true);
  expect_sqlite_intact();
  const long beyond =
      deliveries_beyond_claims(deliveries, per_id("SELECT id, claim_count FROM outbox_messages"));
  std::cout << "chaos outbox (" << (is_pg() ? "postgres" : "sqlite") << "): " << chaos.kills << " SIGKILLs ("
            << chaos.kills_of_finite << " of writers); " << report.summary() << "; deliveries beyond claims "
            << beyond << "\n";
  RecordProperty("report", report.summary());
  EXPECT_GT(chaos.kills, 0);
  EXPECT_EQ(report.produced, producers * per_producer);
  EXPECT_EQ(count("SELECT count(*) FROM outbox_messages WHERE state = 'dead'"), 0);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(beyond, 0) << "an envelope was delivered more often than it was claimed";
}

// The actor itself (a defect found by the many-hosts run): a writer whose
// commit was in doubt retries its batch; when that earlier commit had in fact
// stored the whole batch, the retry inserts nothing, and the writer must
// still move past it, logging each id once. It used to advance by what the
// retry wrote (0) and log the same batch forever.
TEST_P(chaos_ops_outbox, a_writer_whose_earlier_attempt_stored_its_whole_batch_moves_past_it) {
  {
    outbox::writer w(*db_);
    spool::tx tx(*db_);
    for (int j = 0; j < 2; ++j) {  // the actor's first batch, as its in-doubt commit left it
      outbox::envelope e;
      e.id = "p-000000" + std::to_string(j);
      e.topic = "chaos";
      e.payload = "{}";
      e.ordering_key = "k" + std::to_string(j);
      (void)w.insert(tx, e);
    }
    tx.commit();
  }
  const auto log = logs() / "obx-p.log";
  cli_process actor(env_path("SPOOL_CHAOS_ACTOR"),
                    {"write", "--db", uri_, "--name", "p", "--keys", "10", "--count", "6", "--batch", "2", "--log",
                     log.string()},
                    dir_.path(), "actor");
  // id → how many times the actor logged it as produced
  auto logged = [&] {
    std::map<std::string, int> out;
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) ++out[line.substr(2, line.find('\t', 2) - 2)];
    return out;
  };
  ASSERT_TRUE(eventually([&] { return !actor.running(); }, 1min))
      << "the actor is still writing after a minute; it logged " << logged().size() << " ids, "
      << logged()["p-0000000"] << " times p-0000000";
  EXPECT_EQ(actor.stop(0), 0) << actor.err();
  std::map<std::string, int> once;
  for (int j = 0; j < 6; ++j) once["p-000000" + std::to_string(j)] = 1;
  EXPECT_EQ(logged(), once);
  EXPECT_EQ(count("SELECT count(*) FROM outbox_messages"), 6);
}

INSTANTIATE_TEST_SUITE_P(engines, chaos_ops_outbox, ::testing::Values(engine::postgres, engine::sqlite),
                         [](const auto& info) {
                           return info.param == engine::postgres ? "postgres" : "sqlite";
                         });

}  // namespace
}  // namespace spool::test
