// Support for the partition tests (issue 17): a network namespace joined to
// the host by a veth pair, a PostgreSQL server of the test's own listening on
// it, and the per-run command the worker pool's and relay's tests use.
// Everything here needs root (namespaces, veth, routes), as CI runs; it fails,
// naming that, elsewhere.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
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

namespace spool::test::partition {

using namespace std::chrono_literals;

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs a command line; throws with its output when it fails.
inline std::string sh(const std::string& command) {
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

// `spool ops work` as the partition and many-hosts tests run it: two
// workers, leases of 3 s renewed every 500 ms, a rescue every 500 ms, and
// each op handed to `exec`.
inline std::vector<std::string> ops_work_args(const std::string& uri, const std::string& type,
                                              const std::string& owner, const std::string& exec) {
  return {"ops",
          "work",
          "--db",
          uri,
          "--type",
          type,
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
          owner,
          "--log-level",
          "info",
          "--exec",
          exec};
}

inline std::string env_or_throw(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) throw std::runtime_error(std::string(name) + " is not set (run through ctest)");
  return v;
}

// Removes the namespaces of test processes that no longer run (a run killed
// before its destructors): their veth's address would shadow a new
// namespace's on the same subnet. Deleting a namespace deletes its veth pair.
inline void sweep_stale_namespaces() {
  static const std::regex named(R"(^spool-part-(\d+)-\d+)");
  std::istringstream names(sh("ip netns list"));
  for (std::string line; std::getline(names, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, named)) continue;
    if (::kill(static_cast<pid_t>(std::stol(m[1].str())), 0) == 0 || errno != ESRCH) continue;
    (void)::system(fmt::format("ip netns del {} 2>/dev/null", m[0].str()).c_str());
  }
}

// The first N from `preferred` on whose 10.201.N.0/24 no host interface has
// an address and no blackhole route points.
inline int free_subnet(int preferred) {
  const std::string used = sh("ip -o -4 addr show") + sh("ip -4 route show type blackhole");
  for (int k = 0; k < 250; ++k) {
    const int n = (preferred - 1 + k) % 250 + 1;
    if (used.find(fmt::format("10.201.{}.", n)) == std::string::npos) return n;
  }
  throw std::runtime_error("no free 10.201.N.0/24 subnet left for a test's network namespace");
}

// An exclusive lock shared by every test process on the machine, held while
// a namespace's subnet is chosen and its veth takes it: chaos_postgres and
// chaos_many_hosts build namespaces side by side, and two processes on one
// subnet cut each other off.
class subnet_lock {
 public:
  subnet_lock() : fd_(::open("/tmp/spool-test-netns.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0600)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
      throw std::runtime_error("cannot lock /tmp/spool-test-netns.lock for a test's network namespace");
  }
  ~subnet_lock() { ::close(fd_); }  // closing releases the lock
  subnet_lock(const subnet_lock&) = delete;
  subnet_lock& operator=(const subnet_lock&) = delete;

 private:
  int fd_;
};

// A network namespace joined to the host by a veth pair: host side
// 10.201.N.1, namespace side 10.201.N.2, N free on this machine (see
// subnet_lock; a test may build three at once). Removed by the destructor.
class host_namespace {
 public:
  explicit host_namespace(int index = 0) {
    const subnet_lock lock;
    sweep_stale_namespaces();
    const int n = free_subnet(static_cast<int>(::getpid() % 80) * 3 + index + 1);
    name_ = fmt::format("spool-part-{}-{}", ::getpid(), index);
    host_if_ = fmt::format("sph{}", n);
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

// A command a worker runs per op or envelope: `sh SCRIPT LOG WHO SECONDS
// IDVAR COUNTVAR` logs "S id count ns who" at its start, sleeps SECONDS and
// logs "E id count ns who done"; stopped by SIGTERM it logs "... term".
inline std::filesystem::path write_run_script(const std::filesystem::path& dir) {
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

inline std::vector<run_line> read_runs(const std::filesystem::path& log) {
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

inline std::int64_t ns_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace spool::test::partition
