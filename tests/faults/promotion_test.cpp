// A streaming standby promoted mid-run (Spool issue 7). Spool opens both
// servers in one multi-host URI with target_session_attrs=read-write; the
// primary is stopped like a crash and the standby promoted. The same objects
// reach the new primary by themselves (libpq skips the dead host and,
// before the promotion, the read-only one), report unavailable or in_doubt
// in between, and lose nothing acknowledged.
//
// The standby is the primary's synchronous standby (synchronous_commit = on,
// synchronous_standby_names = the standby; tests/support/pg_replica.sh), so
// a commit the primary acknowledged is on the standby: "acknowledged as
// committed before the failover" means "replicated". Without a synchronous
// standby a failover may lose acknowledged commits, and no client can help it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "faults/faults_support.hpp"
#include "spool/migrate.hpp"

namespace spool::test::faults {
namespace {

using namespace std::chrono_literals;

// The port of the server db's connections reach, asked through Spool (the
// first attempts after a failover meet pooled connections to the old primary).
std::string server_port(database& db) {
  for (int attempt = 0;; ++attempt) {
    try {
      return db.exec("SELECT current_setting('port')").at(0).at(0).value_or("");
    } catch (const spool::error& e) {
      if (attempt >= 50 || !(e.code() == errc::unavailable || e.code() == errc::in_doubt)) throw;
      std::this_thread::sleep_for(100ms);
    }
  }
}

std::set<std::string> ids_on(const std::string& uri, const std::string& sql) {
  std::set<std::string> out;
  for (const auto& row : pg_query(uri, sql)) out.insert(row.at(0).value_or(""));
  return out;
}

std::size_t missing(const std::set<std::string>& wanted, const std::set<std::string>& have) {
  std::size_t n = 0;
  for (const auto& id : wanted) n += have.count(id) == 0;
  return n;
}

TEST(faults_promotion_postgres,
     a_multi_host_uri_follows_the_promoted_standby_and_loses_nothing_acknowledged) {
  replica_pair servers;
  database_options options;
  options.connect_timeout = 2s;
  auto db = database::open(servers.multi_host_uri(), options);
  spool::migrate(db);
  ASSERT_NE(server_port(db), servers.standby_port()) << "target_session_attrs=read-write chose the standby";

  workload w(db, "promotion");
  w.start();
  ASSERT_TRUE(w.wait_for_progress(100, 60s)) << "the workload made no progress before the failover";

  servers.stop_primary("immediate");
  // Every call acknowledged so far was acknowledged by the old primary.
  const auto before = w.snapshot();
  std::this_thread::sleep_for(500ms);  // the workload meets the dead primary and the read-only standby
  servers.promote();

  // Straight on the promoted standby: what the old primary acknowledged is
  // there. Ops and outbox rows are never deleted; mq rows may have been
  // consumed, which verify() accounts for below.
  const auto ops_there = ids_on(servers.standby_uri(), "SELECT id FROM ops_queue");
  const auto outbox_there = ids_on(servers.standby_uri(), "SELECT id FROM outbox_messages");
  EXPECT_EQ(missing(before.ops, ops_there), 0u) << "of " << before.ops.size() << " acknowledged enqueues";
  EXPECT_EQ(missing(before.outbox, outbox_there), 0u)
      << "of " << before.outbox.size() << " committed envelopes";

  EXPECT_TRUE(w.wait_for_progress(5, 60s)) << "the workload did not reach the promoted standby";
  w.stop();
  w.expect_same_objects_recover();
  EXPECT_EQ(server_port(db), servers.standby_port())
      << "the same database handle now reaches the new primary";
  w.drain();
  const auto r =
      w.verify(fmt::format("standby promotion: {} acknowledged before the failover ({} mq, {} ops, {} "
                           "outbox), all on the new primary",
                           before.mq.size() + before.ops.size() + before.outbox.size(), before.mq.size(),
                           before.ops.size(), before.outbox.size()));
  EXPECT_GT(r.recoveries, 0u) << "no call failed and then succeeded: the failover was not observed";
  EXPECT_EQ(r.lost, 0u);
}

}  // namespace
}  // namespace spool::test::faults
