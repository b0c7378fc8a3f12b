// A real network partition (issue 17, "Real partitions"): a consumer process
// runs in a network namespace of the test's own, reaching a PostgreSQL server
// of the test's own over a veth pair, beside a consumer on the host. Mid-run
// the namespace's traffic is dropped (both ways, or only what it sends) for
// four visibility windows, then let through again. The partitioned
// consumer's claims must go to the other host once their window passes, its
// late acks must be refused (its receipts are stale), and the delivery-log
// checker must find nothing lost and no second claim inside a live window.
//
// The test needs root (namespaces, veth, routes), as CI runs; it fails,
// naming that, elsewhere.
#include <gtest/gtest.h>

#include "chaos/partition_support.hpp"

namespace spool::test {
namespace {

using namespace spool::test::partition;

void run_partition(bool both_ways) {
  host_namespace ns;
  listening_pg_server server(ns.host_ip());
  const std::string local_uri = server.uri("127.0.0.1"), remote_uri = server.uri(ns.host_ip());
  auto db = database::open(local_uri);
  spool::migrate(db);

  temp_dir dir;
  const auto logs = dir.path() / "logs";
  std::filesystem::create_directories(logs);
  const std::string queue = "partition", actor = env_or_throw("SPOOL_CHAOS_ACTOR");
  // Few enough that the other consumer runs out of never-claimed messages
  // during the cut: claims take the earliest visible first, and a claim that
  // expired is visible only from its window's end.
  constexpr int messages = 200;
  cli_process producer(
      actor,
      {"produce", "--db", local_uri, "--queue", queue, "--name", "p", "--groups", "60", "--count",
       std::to_string(messages), "--batch", "20", "--log", (logs / "part-p.log").string()},
      dir.path(), "producer");
  ASSERT_EQ(producer.stop(0), 0) << producer.err();

  // The namespace's consumer handles a message in 200 ms, so it holds claims
  // nearly all the time; the other one is fast, so it runs out of
  // never-claimed messages during the cut and takes the expired claims.
  auto consumer = [&](const std::string& name, const std::string& uri, const std::string& handle_ms) {
    return std::vector<std::string>{"consume",
                                    "--db",
                                    uri,
                                    "--queue",
                                    queue,
                                    "--visibility",
                                    "3",
                                    "--batch",
                                    "4",
                                    "--handle-ms",
                                    handle_ms,
                                    "--log",
                                    (logs / ("part-" + name + ".log")).string()};
  };
  std::vector<supervised> actors;
  auto away_args = consumer("away", remote_uri, "200");
  away_args.insert(away_args.begin(), {"netns", "exec", ns.name(), actor});
  actors.push_back({"away", "/usr/sbin/ip", away_args, false, "spool_chaos_actor: ready"});
  actors.push_back({"home", actor, consumer("home", local_uri, "20"), false, "spool_chaos_actor: ready"});
  if (!std::filesystem::exists("/usr/sbin/ip")) actors[0].exe = "/sbin/ip";
  for (auto& a : actors) a.start(dir.path());

  const auto handled_by = [&](const std::string& name) {
    std::ifstream in(logs / ("part-" + name + ".log"));
    long n = 0;
    for (std::string line; std::getline(in, line);) n += line.rfind("H\t", 0) == 0;
    return n;
  };
  const auto remaining = [&] {
    return std::stol(
        *db.exec("SELECT count(*) FROM queue_messages WHERE queue_name = $1", {queue}).at(0).at(0));
  };
  // Cut while the namespace's consumer holds a claim it has not acked: its
  // last line is a handling (H) one, and its ack comes 200 ms after.
  const auto last_line_of_away = [&] {
    std::ifstream in(logs / "part-away.log");
    std::string line, last;
    while (std::getline(in, line)) last = line;
    return last;
  };
  bool holding = false;
  for (int i = 0; i < 60000 && !holding; ++i) {
    holding = handled_by("away") >= 5 && last_line_of_away().rfind("H\t", 0) == 0;
    if (!holding) std::this_thread::sleep_for(1ms);
  }
  if (!holding) {
    for (const auto& f : stop_when_ready(actors)) ADD_FAILURE() << f;
    FAIL() << "the namespace's consumer never held a claim: " << actors[0].proc->err();
  }
  const long away_before = handled_by("away");
  ns.cut(both_ways);
  std::this_thread::sleep_for(12s);  // four visibility windows
  const long away_during = handled_by("away") - away_before;
  ns.heal();

  const auto until = std::chrono::steady_clock::now() + 120s;
  while (remaining() != 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(200ms);
  EXPECT_EQ(remaining(), 0) << "the queue did not drain after the partition healed";
  for (const auto& f : stop_when_ready(actors)) ADD_FAILURE() << f;

  std::vector<produced_record> produced;
  std::vector<delivery_record> deliveries;
  read_logs(logs, "part-", produced, deliveries);
  if (std::getenv("SPOOL_PARTITION_DEBUG")) {
    for (const char* who : {"away", "home"}) {
      std::ifstream in(logs / (std::string("part-") + who + ".log"));
      for (std::string line; std::getline(in, line);) std::cout << who << ": " << line << "\n";
    }
    std::cout << "away stderr: " << actors[0].proc->err() << "\n";
  }
  auto report = check_deliveries(produced, deliveries, {.group_order = true, .strict_group_order = true});
  std::map<std::string, std::string> stored;
  for (const auto& r : db.exec("SELECT id FROM queue_messages WHERE queue_name = $1", {queue}))
    stored[*r.at(0)] = "";
  check_final_state(report, produced, stored, "", false);
  std::cout << "partition (" << (both_ways ? "both ways" : "client to server") << ", 12 s): away handled "
            << away_before << " before, " << away_during << " during; " << report.summary() << "\n";
  ::testing::Test::RecordProperty("report", report.summary());
  EXPECT_EQ(report.produced, messages);
  EXPECT_TRUE(report.ok()) << report.summary();
  // The claims the partitioned consumer held went to the other host.
  EXPECT_GT(report.explained_duplicates, 0)
      << "no claim of the partitioned consumer was taken over: " << report.summary();
}

TEST(mq_partition_postgres,
     a_consumer_cut_off_both_ways_loses_its_claims_to_the_other_host_and_nothing_is_lost) {
  run_partition(/*both_ways=*/true);
}

TEST(mq_partition_postgres,
     a_consumer_whose_packets_to_the_server_are_dropped_loses_its_claims_and_nothing_is_lost) {
  run_partition(/*both_ways=*/false);
}

}  // namespace
}  // namespace spool::test
