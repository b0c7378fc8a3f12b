// Support for the database-fault suite (Spool issue 7): servers of a test's
// own (a private server to restart, a primary with a streaming standby to
// promote) and the workload that runs while a fault strikes.
//
// The workload publishes (mq), enqueues (ops) and inserts outbox envelopes in
// the caller's transaction, while consumers claim and acknowledge, all on one
// spool::database handle. Every call's outcome is recorded: success means
// "acknowledged as committed", in_doubt means the outcome is unknown,
// unavailable means nothing was done. Anything else a call throws is a
// failure of the test. Afterwards the same objects must work again, a drain
// consumes what is left, and verify() checks that nothing acknowledged was
// lost and nothing acknowledged as consumed came back.
//
// The servers are in faults_support.cpp; the workload in workload.cpp (its
// objects, start, stop, recovery and drain), workload_threads.cpp (its six
// threads) and workload_verify.cpp (the verdict), over workload_state.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "support/test_db.hpp"

namespace spool::test::faults {

// ---- processes ----

std::string sh_quote(const std::string& s);
// Runs a shell command line and returns its output (stderr included); throws
// std::runtime_error naming the command and its output when it fails.
std::string run(const std::string& command);
// A variable the CTest definition sets; throws, naming it, when it is missing.
std::string required_env(const char* name);
// The file's first line.
std::string read_line(const std::filesystem::path& file);
// The seed of this run's random fault schedule: $SPOOL_TEST_FAULTS_SEED to
// replay a run, else a fresh one. Printed by the caller.
std::uint64_t fault_seed();

// A PostgreSQL server of the test's own (tests/support/pg_server.sh), stopped
// by the destructor also when an assertion failed. The shared test server
// serves suites running in parallel: a test never restarts that one.
class private_pg_server {
 public:
  // durable: the settings users run (fsync, synchronous_commit and
  // full_page_writes on; SPOOL_PG_DURABLE of pg_server.sh) instead of the
  // test cluster's fast ones.
  explicit private_pg_server(bool durable = false);
  ~private_pg_server();
  private_pg_server(const private_pg_server&) = delete;
  private_pg_server& operator=(const private_pg_server&) = delete;

  // Restarts in place (same data and port); mode is fast or immediate.
  void restart(const std::string& mode);
  [[nodiscard]] const std::string& uri() const { return uri_; }

 private:
  void script(const std::string& command, const std::string& mode = {}, bool durable = false);
  temp_dir dir_;  // declared first: removed only after the destructor stopped the server
  std::string script_;
  std::string uri_;
};

// A primary and its synchronous streaming standby (tests/support/pg_replica.sh),
// both stopped by the destructor also when an assertion failed.
class replica_pair {
 public:
  replica_pair();
  ~replica_pair();
  replica_pair(const replica_pair&) = delete;
  replica_pair& operator=(const replica_pair&) = delete;

  // Both hosts, primary first, with target_session_attrs=read-write.
  [[nodiscard]] const std::string& multi_host_uri() const { return multi_uri_; }
  [[nodiscard]] const std::string& primary_uri() const { return primary_uri_; }
  [[nodiscard]] const std::string& standby_uri() const { return standby_uri_; }
  [[nodiscard]] const std::string& standby_port() const { return standby_port_; }
  void stop_primary(const std::string& mode);
  void promote();

 private:
  void script(const std::string& command, const std::string& mode = {});
  temp_dir dir_;
  std::string script_;
  std::string multi_uri_, primary_uri_, standby_uri_, standby_port_;
};

// ---- the workload ----

// How one kind of call fared.
struct call_tally {
  std::uint64_t ok = 0, unavailable = 0, in_doubt = 0;
  // A call that succeeded right after the same worker's previous call failed:
  // the objects reconnected by themselves.
  std::uint64_t recoveries = 0;
  std::map<std::string, std::uint64_t> reasons;  // "in_doubt/connection_lost" → count
  std::vector<std::string> unexpected;           // anything but unavailable / in_doubt
};

// What verify() found, for the test's report and docs/GUARANTEES.md.
struct fault_report {
  std::uint64_t acknowledged = 0;  // calls that returned success (publish, enqueue, commit)
  std::uint64_t in_doubt = 0;      // producer calls reported in_doubt
  std::uint64_t in_doubt_present = 0;
  std::uint64_t unavailable = 0;
  std::uint64_t lost = 0;  // acknowledged, then neither stored nor consumed
  std::uint64_t redelivered_after_ack = 0;
  std::uint64_t recoveries = 0;
  std::map<std::string, std::uint64_t> reasons;  // every call's failures: "unavailable/disk_full" → count
};

class workload {
 public:
  // Builds the queues and the writer over db (migrated by the caller). label
  // prefixes every id, so reruns on one database never collide.
  workload(database db, std::string label);
  ~workload();
  workload(const workload&) = delete;
  workload& operator=(const workload&) = delete;

  // Starts three producers (mq publish, ops enqueue, outbox insert + commit)
  // and three consumers (mq poll + ack, ops dequeue + ack, outbox claim +
  // mark_delivered).
  void start();
  // Stops and joins every thread.
  void stop();
  // Waits until each producer and consumer recorded at least n successes
  // since this call (or the deadline passes: false).
  bool wait_for_progress(std::uint64_t n, std::chrono::seconds deadline);

  // After the fault: each object of the run (the same queues, writer and
  // database handle) performs a call successfully within a bounded number
  // of attempts. Failures before that must be unavailable or in_doubt.
  void expect_same_objects_recover();
  // Consumes everything left (claims of in-doubt calls return after the
  // visibility window or the lease, which drain rescues).
  void drain();
  // Checks the invariants (see the file comment) with EXPECTs and returns
  // the counts; prints them under the fault's name.
  fault_report verify(const std::string& fault);

  // The ids acknowledged as committed so far (mq, ops, outbox), for a check
  // against another server (the promoted standby).
  struct acknowledged_ids {
    std::set<std::string> mq, ops, outbox;
    std::set<std::string> mq_consumed;  // mq ids whose ack returned success or in_doubt
  };
  acknowledged_ids snapshot();

  [[nodiscard]] const std::string& outbox_table() const { return outbox_table_; }

 private:
  struct state;
  void mq_producer(std::stop_token st);
  void ops_producer(std::stop_token st);
  void outbox_producer(std::stop_token st);
  void mq_consumer(std::stop_token st);
  void ops_consumer(std::stop_token st);
  void outbox_consumer(std::stop_token st);

  database db_;
  std::string label_;
  std::string outbox_table_ = "outbox_messages";
  std::unique_ptr<mq::queue> mq_;
  std::unique_ptr<ops::queue> ops_;
  std::unique_ptr<outbox::writer> writer_;
  std::unique_ptr<outbox::store> store_;
  std::unique_ptr<state> s_;
  std::vector<std::jthread> threads_;
};

}  // namespace spool::test::faults
