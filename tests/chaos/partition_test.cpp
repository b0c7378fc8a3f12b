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
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chaos/supervisor.hpp"
#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "support/delivery_log.hpp"
#include "support/test_db.hpp"

namespace spool::test {
namespace {

using namespace std::chrono_literals;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a command line; throws with its output when it fails.
std::string sh(const std::string& command) {
  const std::string full = command + " 2>&1";
  FILE* p = ::popen(full.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buf[512];
  while (const auto n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  if (status != 0) throw std::runtime_error(fmt::format("`{}` failed ({}): {}", command, status, out));
  return out;
}

std::string env_or_throw(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return v;
}

// A network namespace joined to the host by a veth pair: host side
// 10.201.N.1, namespace side 10.201.N.2. Removed by the destructor.
class host_namespace {
 public:
  host_namespace() {
    const int n = static_cast<int>(::getpid() % 250) + 1;
    name_ = fmt::format("spool-part-{}", ::getpid());
    host_if_ = fmt::format("sph{}", ::getpid() % 100000);
    host_ip_ = fmt::format("10.201.{}.1", n);
    ns_ip_ = fmt::format("10.201.{}.2", n);
    try {
      sh("ip netns add " + name_);
      sh(fmt::format("ip link add {} type veth peer name {}n", host_if_, host_if_));
      sh(fmt::format("ip link set {}n netns {}", host_if_, name_));
      sh(fmt::format("ip addr add {}/24 dev {}", host_ip_, host_if_));
      sh(fmt::format("ip link set {} up", host_if_));
      sh(fmt::format("ip netns exec {} ip addr add {}/24 dev {}n", name_, ns_ip_, host_if_));
      sh(fmt::format("ip netns exec {} ip link set {}n up", name_, host_if_));
      sh(fmt::format("ip netns exec {} ip link set lo up", name_));
    } catch (const std::exception& e) {
      cleanup();
      throw std::runtime_error(std::string("cannot build the test's network (it needs root, as CI runs): ") +
                               e.what());
    }
  }
  ~host_namespace() { cleanup(); }
  host_namespace(const host_namespace&) = delete;
  host_namespace& operator=(const host_namespace&) = delete;

  // Drops what the namespace sends to the server and, with both_ways, what
  // the server sends back: blackhole routes, so no connection is reset.
  void cut(bool both_ways) {
    sh(fmt::format("ip netns exec {} ip route add blackhole {}/32", name_, host_ip_));
    if (both_ways) sh(fmt::format("ip route add blackhole {}/32", ns_ip_));
  }
  void heal() {
    (void)::system(
        fmt::format("ip netns exec {} ip route del blackhole {}/32 2>/dev/null", name_, host_ip_).c_str());
    (void)::system(fmt::format("ip route del blackhole {}/32 2>/dev/null", ns_ip_).c_str());
  }

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& host_ip() const { return host_ip_; }

 private:
  void cleanup() {
    heal();
    (void)::system(fmt::format("ip link del {} 2>/dev/null", host_if_).c_str());
    (void)::system(fmt::format("ip netns del {} 2>/dev/null", name_).c_str());
  }
  std::string name_, host_if_, host_ip_, ns_ip_;
};

// A PostgreSQL server of the test's own that also listens on the host side of
// the veth (tests/support/pg_server.sh with SPOOL_PG_LISTEN).
class listening_pg_server {
 public:
  explicit listening_pg_server(const std::string& address) : script_(env_or_throw("SPOOL_TEST_PG_SCRIPT")) {
    sh(fmt::format("SPOOL_PG_LISTEN={} {} start {}", address, shell_quote(script_),
                   shell_quote(dir_.path())));
    std::ifstream in(dir_.path() / "port");
    in >> port_;
  }
  ~listening_pg_server() {
    try {
      sh(fmt::format("{} stop {}", shell_quote(script_), shell_quote(dir_.path())));
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  listening_pg_server(const listening_pg_server&) = delete;
  listening_pg_server& operator=(const listening_pg_server&) = delete;

  [[nodiscard]] std::string uri(const std::string& host) const {
    return fmt::format("postgresql://postgres@{}:{}/postgres", host, port_);
  }

 private:
  temp_dir dir_;
  std::string script_;
  std::string port_;
};

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

// A command a worker runs per op or envelope: `sh SCRIPT LOG WHO SECONDS
// IDVAR COUNTVAR` logs "S id count ns who" at its start, sleeps SECONDS and
// logs "E id count ns who done"; stopped by SIGTERM it logs "... term".
std::filesystem::path write_run_script(const std::filesystem::path& dir) {
  const auto script = dir / "run.sh";
  std::ofstream(script)
      << "log=$1; who=$2; secs=$3; eval \"id=\\${$4}\"; eval \"n=\\${$5}\"\n"
         "cat > /dev/null\n"
         "printf 'S\\t%s\\t%s\\t%s\\t%s\\n' \"$id\" \"$n\" \"$(date +%s%N)\" \"$who\" >> \"$log\"\n"
         "trap 'printf \"E\\t%s\\t%s\\t%s\\t%s\\tterm\\n\" \"$id\" \"$n\" \"$(date +%s%N)\" "
         "\"$who\" >> \"$log\"; exit 143' TERM\n"
         "sleep \"$secs\" & wait $!\n"
         "printf 'E\\t%s\\t%s\\t%s\\t%s\\tdone\\n' \"$id\" \"$n\" \"$(date +%s%N)\" \"$who\" >> "
         "\"$log\"\n";
  return script;
}

struct run_line {
  std::string kind, id, count, who, how;
  std::int64_t ns = 0;
};

std::vector<run_line> read_runs(const std::filesystem::path& log) {
  std::vector<run_line> out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::size_t at = 0;
    for (std::size_t tab; (tab = line.find('\t', at)) != std::string::npos; at = tab + 1)
      f.push_back(line.substr(at, tab - at));
    f.push_back(line.substr(at));
    if (f.size() < 5) continue;
    out.push_back({f[0], f[1], f[2], f[4], f.size() > 5 ? f[5] : "", std::stoll(f[3])});
  }
  return out;
}

std::int64_t ns_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
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
    return std::vector<std::string>{"ops",
                                    "work",
                                    "--db",
                                    uri,
                                    "--type",
                                    "part",
                                    "--concurrency",
                                    "2",
                                    "--poll-interval",
                                    "50ms",
                                    "--heartbeat-interval",
                                    "500ms",
                                    "--lease-timeout",
                                    "3s",
                                    "--rescue-interval",
                                    "500ms",
                                    "--owner",
                                    who,
                                    "--log-level",
                                    "info",
                                    "--exec",
                                    fmt::format("sh {} {} {} {} SPOOL_OP_ID SPOOL_OP_ATTEMPTS",
                                                script.string(), log.string(), who, secs)};
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
  for (const auto& id : held) {
    SCOPED_TRACE(id);
    std::optional<run_line> away_end, home_start;
    for (const auto& r : all) {
      if (r.id != id) continue;
      if (r.kind == "E" && r.who == "away") away_end = r;
      if (r.kind == "S" && r.who == "home" && !home_start) home_start = r;
    }
    // Noticed within the cut: the command was stopped, not run to its end.
    ASSERT_TRUE(away_end) << "the namespace's command of " << id << " never ended";
    EXPECT_EQ(away_end->how, "term") << "the partitioned pool let its command run to the end";
    EXPECT_LT(away_end->ns, ns_of(healed_at)) << "the partitioned pool noticed only after the cut healed";
    EXPECT_GT(away_end->ns, ns_of(cut_at));
    ASSERT_TRUE(home_start) << "the host's pool never ran " << id;
    std::cout << id << ": the cut-off pool stopped its command " << (away_end->ns - ns_of(cut_at)) / 1'000'000
              << " ms after the cut; the host's pool started it again after "
              << (home_start->ns - ns_of(cut_at)) / 1'000'000 << " ms\n";
    // Self-fencing: the cut-off pool stopped its command before the server
    // could give the op to another pool, so the two runs never overlap.
    EXPECT_LT(away_end->ns, home_start->ns) << "the cut-off pool's command still ran when the op ran again";
    // The op's outcome is the host's: done, claimed again after the lease.
    const auto row = db.exec("SELECT status, lease_owner, attempts FROM ops_queue WHERE id = $1", {id});
    ASSERT_EQ(row.size(), 1u);
    EXPECT_EQ(row[0][0], "done");
    EXPECT_GE(std::stoi(*row[0][2]), 2) << "the rescue counts a second attempt";
  }
  long done_by_away_after_cut = 0;
  for (const auto& r : all)
    done_by_away_after_cut += r.kind == "E" && r.who == "away" && r.how == "done" && r.ns > ns_of(cut_at);
  EXPECT_EQ(done_by_away_after_cut, 0) << "a command of the partitioned pool ran to its end after the cut";
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

  const auto all = read_runs(log);
  for (const auto& id : held) {
    SCOPED_TRACE(id);
    std::optional<run_line> away_end, home_start;
    for (const auto& r : all) {
      if (r.id != id) continue;
      if (r.kind == "E" && r.who == "away" && !away_end) away_end = r;
      if (r.kind == "S" && r.who == "home" && !home_start) home_start = r;
    }
    ASSERT_TRUE(away_end) << "the namespace's sink call of " << id << " never ended";
    EXPECT_EQ(away_end->how, "term") << "the partitioned relay let its sink call run to the end";
    EXPECT_GT(away_end->ns, ns_of(cut_at));
    EXPECT_LT(away_end->ns, ns_of(healed_at)) << "the partitioned relay noticed only after the cut healed";
    ASSERT_TRUE(home_start) << "the host's relay never published " << id;
    EXPECT_LT(away_end->ns, home_start->ns)
        << "the cut-off relay's sink call still ran when the row was published again";
    std::cout << id << ": the cut-off relay stopped its sink call "
              << (away_end->ns - ns_of(cut_at)) / 1'000'000
              << " ms after the cut; the host's relay published it again after "
              << (home_start->ns - ns_of(cut_at)) / 1'000'000 << " ms\n";
  }
  for (const auto& r : all) {
    EXPECT_FALSE(r.kind == "E" && r.who == "away" && r.how == "done" && r.ns > ns_of(cut_at) &&
                 r.ns < ns_of(healed_at))
        << "a sink call of the partitioned relay ran to its end during the cut: " << r.id;
  }
}

}  // namespace
}  // namespace spool::test
