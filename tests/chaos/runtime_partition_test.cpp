// The op worker pool and the relay behind a real network partition (issue
// 17): `spool ops work` or `spool relay` runs in a network namespace of the
// test's own (chaos/partition_support.hpp) beside one on the host; cut off,
// it must stop its work before its leases can expire on the server, and the
// host's one must do that work after, never at the same time.
#include <gtest/gtest.h>

#include "chaos/partition_support.hpp"

namespace spool::test {
namespace {

using namespace spool::test::partition;

// For each run the cut-off runtime ("away") held when the cut came: it was
// stopped (SIGTERM, not run to its end) after the cut and before it healed,
// and the host's runtime ("home") started it again only after that, so the
// two runs never overlap (self-fencing). what names the run in messages.
void expect_stopped_before_rerun(const std::vector<run_line>& all, const std::set<std::string>& held,
                                 std::chrono::system_clock::time_point cut_at,
                                 std::chrono::system_clock::time_point healed_at, const std::string& what) {
  for (const auto& id : held) {
    SCOPED_TRACE(id);
    std::optional<run_line> away_end, home_start;
    for (const auto& r : all) {
      if (r.id != id) continue;
      if (r.kind == "E" && r.who == "away" && !away_end) away_end = r;
      if (r.kind == "S" && r.who == "home" && !home_start) home_start = r;
    }
    ASSERT_TRUE(away_end) << "the cut-off " << what << " of " << id << " never ended";
    EXPECT_EQ(away_end->how, "term") << "the cut-off " << what << " ran to its end";
    EXPECT_GT(away_end->ns, ns_of(cut_at));
    EXPECT_LT(away_end->ns, ns_of(healed_at)) << "the cut-off runtime noticed only after the cut healed";
    ASSERT_TRUE(home_start) << "the host's runtime never ran " << id;
    EXPECT_LT(away_end->ns, home_start->ns)
        << "the cut-off " << what << " still ran when " << id << " ran again";
    std::cout << id << ": the cut-off " << what << " stopped " << (away_end->ns - ns_of(cut_at)) / 1'000'000
              << " ms after the cut; the host started it again after "
              << (home_start->ns - ns_of(cut_at)) / 1'000'000 << " ms\n";
  }
  for (const auto& r : all) {
    EXPECT_FALSE(r.kind == "E" && r.who == "away" && r.how == "done" && r.ns > ns_of(cut_at) &&
                 r.ns < ns_of(healed_at))
        << "a " << what << " of the cut-off runtime ran to its end during the cut: " << r.id;
  }
}

// The op worker pool behind the same partition: `spool ops work` in the
// namespace runs each op's command for 8 s, another pool on the host for
// 50 ms. Cut while the namespace's pool runs ops, for 12 s: its heartbeats
// fail, so it must cancel those commands before their leases can expire on
// the server (self-fencing), long before they would end; the host's pool
// rescues the ops after the lease expired and runs them again, never while
// the first run still runs; every op ends done, its attempt counting both
// runs.
TEST(ops_partition_postgres,
     a_pool_cut_off_cancels_its_handlers_within_its_lease_and_another_host_runs_them) {
  host_namespace ns;
  listening_pg_server server(ns.host_ip());
  const std::string local_uri = server.uri("127.0.0.1"), remote_uri = server.uri(ns.host_ip());
  auto db = database::open(local_uri);
  spool::migrate(db);
  temp_dir dir;
  const auto log = dir.path() / "runs.log";
  const auto script = write_run_script(dir.path());
  constexpr int ops_count = 40;
  {
    ops::queue q(db);
    for (int i = 0; i < ops_count; ++i) {
      ops::new_op op;
      op.id = fmt::format("op-{:03}", i);
      op.type = "part";
      op.max_attempts = 10;
      (void)q.enqueue(op);
    }
  }
  const std::string cli = env_or_throw("SPOOL_CLI");
  auto pool = [&](const std::string& who, const std::string& uri, const std::string& secs) {
    return ops_work_args(uri, "part", who,
                         fmt::format("sh {} {} {} {} SPOOL_OP_ID SPOOL_OP_ATTEMPTS", script.string(),
                                     log.string(), who, secs));
  };
  auto away_args = pool("away", remote_uri, "8");
  away_args.insert(away_args.begin(), {"netns", "exec", ns.name(), cli});
  std::vector<supervised> pools;
  pools.push_back({"away", "/usr/sbin/ip", away_args, false, "ops work: started"});
  pools.push_back({"home", cli, pool("home", local_uri, "0.05"), false, "ops work: started"});
  // The namespace's pool first, so that it holds ops when the cut comes.
  pools[0].start(dir.path());
  const auto runs = [&] { return read_runs(log); };
  std::set<std::string> held;
  for (int i = 0; i < 600 && held.size() < 2; ++i) {
    held.clear();
    for (const auto& r : runs())
      if (r.kind == "S" && r.who == "away") held.insert(r.id);
    if (held.size() < 2) std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(held.size(), 2u) << "the namespace's pool did not start its two ops: " << pools[0].proc->err();
  pools[1].start(dir.path());
  const auto cut_at = std::chrono::system_clock::now();
  ns.cut(/*both_ways=*/true);
  std::this_thread::sleep_for(12s);
  const auto healed_at = std::chrono::system_clock::now();
  ns.heal();

  const auto open_ops = [&] {
    return std::stol(*db.exec("SELECT count(*) FROM ops_queue WHERE status <> 'done'").at(0).at(0));
  };
  const auto until = std::chrono::steady_clock::now() + 120s;
  while (open_ops() != 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(200ms);
  EXPECT_EQ(open_ops(), 0) << "ops not done after the cut healed";
  for (const auto& f : stop_when_ready(pools)) ADD_FAILURE() << f;

  const auto all = runs();
  expect_stopped_before_rerun(all, held, cut_at, healed_at, "command");
  for (const auto& id : held) {
    SCOPED_TRACE(id);
    // The op's outcome is the host's: done, claimed again after the lease.
    const auto row = db.exec("SELECT status, lease_owner, attempts FROM ops_queue WHERE id = $1", {id});
    ASSERT_EQ(row.size(), 1u);
    EXPECT_EQ(row[0][0], "done");
    EXPECT_GE(std::stoi(*row[0][2]), 2) << "the rescue counts a second attempt";
  }
  std::cout << "ops partition (both ways, 12 s): " << held.size() << " ops held by the cut-off pool, "
            << all.size() << " run lines\n";
}

// The relay behind the same partition: `spool relay --sink exec:…` in the
// namespace (lease 3 s, renewals every second) publishes each envelope for
// 8 s, a relay on the host for 50 ms. Cut both ways for 12 s while the
// namespace's relay publishes two: it must stop those sink calls before
// their leases can expire (self-fencing), never record them, and the host's
// relay must deliver them after the leases expired; every envelope ends
// delivered, none published by two relays at once.
TEST(relay_partition_postgres,
     a_relay_cut_off_stops_its_sink_calls_within_its_lease_and_another_host_delivers) {
  host_namespace ns;
  listening_pg_server server(ns.host_ip());
  const std::string local_uri = server.uri("127.0.0.1"), remote_uri = server.uri(ns.host_ip());
  auto db = database::open(local_uri);
  spool::migrate(db);
  temp_dir dir;
  const auto log = dir.path() / "runs.log";
  const auto script = write_run_script(dir.path());
  constexpr int envelopes = 40;
  {
    outbox::writer w(db);
    pg::tx tx(db);
    for (int i = 0; i < envelopes; ++i) {
      outbox::envelope e;
      e.id = fmt::format("env-{:03}", i);
      e.topic = "part";
      e.payload = "{}";
      (void)w.insert(tx, e);
    }
    tx.commit();
  }
  const std::string cli = env_or_throw("SPOOL_CLI");
  auto relay = [&](const std::string& who, const std::string& uri, const std::string& secs) {
    return std::vector<std::string>{
        "relay",
        "--db",
        uri,
        "--concurrency",
        "2",
        "--batch",
        "1",
        "--lease",
        "3s",
        "--poll-interval",
        "50ms",
        "--owner",
        who,
        "--shutdown-grace",
        "1s",
        "--log-level",
        "info",
        "--sink",
        fmt::format("exec:sh {} {} {} {} SPOOL_OUTBOX_ID SPOOL_OUTBOX_CLAIM_COUNT", script.string(),
                    log.string(), who, secs)};
  };
  auto away_args = relay("away", remote_uri, "8");
  away_args.insert(away_args.begin(), {"netns", "exec", ns.name(), cli});
  std::vector<supervised> relays;
  relays.push_back({"away", "/usr/sbin/ip", away_args, false, "relay: started"});
  relays.push_back({"home", cli, relay("home", local_uri, "0.05"), false, "relay: started"});
  relays[0].start(dir.path());
  std::set<std::string> held;
  for (int i = 0; i < 600 && held.size() < 2; ++i) {
    held.clear();
    for (const auto& r : read_runs(log))
      if (r.kind == "S" && r.who == "away") held.insert(r.id);
    if (held.size() < 2) std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(held.size(), 2u) << "the namespace's relay did not start two sink calls: "
                             << relays[0].proc->err();
  relays[1].start(dir.path());
  const auto cut_at = std::chrono::system_clock::now();
  ns.cut(/*both_ways=*/true);
  std::this_thread::sleep_for(12s);
  const auto healed_at = std::chrono::system_clock::now();
  ns.heal();

  const auto undelivered = [&] {
    return std::stol(*db.exec("SELECT count(*) FROM outbox_messages WHERE state <> 'delivered'").at(0).at(0));
  };
  const auto until = std::chrono::steady_clock::now() + 120s;
  while (undelivered() != 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(200ms);
  EXPECT_EQ(undelivered(), 0) << "envelopes not delivered after the cut healed";
  for (const auto& f : stop_when_ready(relays)) ADD_FAILURE() << f;

  expect_stopped_before_rerun(read_runs(log), held, cut_at, healed_at, "sink call");
}

}  // namespace
}  // namespace spool::test
