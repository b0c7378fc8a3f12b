// PostgreSQL-only outbox scenarios that drive other processes: a server of
// the test's own restarted under a relay, and migrations printed by the spool
// CLI and applied by psql, compared with pg_dump (outbox.md §10).
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "outbox_fixture.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

// ---- Processes: pg_server.sh, the spool CLI, psql and pg_dump ----

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (const char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Runs a shell command line and returns its stdout; throws with the command,
// its exit status and its output (stderr included) when it fails.
std::string run(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    throw std::runtime_error(command + " failed (status " + std::to_string(WEXITSTATUS(status)) + "):\n" +
                             out);
  }
  return out;
}

// A variable the CTest definition sets (tests/CMakeLists.txt). Missing means
// the test was started outside ctest: fail, naming it, rather than skip.
std::string required_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(std::string("$") + name +
                             " is not set: run this test through ctest (tests/CMakeLists.txt sets it)");
  }
  return v;
}

// A PostgreSQL client tool of the server's major version, found as
// tests/support/pg_server.sh finds the server's binaries.
std::string pg_tool(const std::string& name) {
  std::vector<std::string> dirs;
  try {
    std::string d = run("pg_config --bindir");
    while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
    dirs.push_back(d);
  } catch (const std::runtime_error&) {
  }
  dirs.emplace_back("/usr/lib/postgresql/15/bin");
  for (const auto& d : dirs) {
    if (std::filesystem::exists(std::filesystem::path(d) / name))
      return (std::filesystem::path(d) / name).string();
  }
  throw std::runtime_error(name + " not found in pg_config --bindir or /usr/lib/postgresql/15/bin");
}

// A PostgreSQL server of the test's own in a temp directory, started with
// tests/support/pg_server.sh and stopped by the destructor, also when an
// assertion fails. The shared test server ($SPOOL_TEST_PG_DIR) serves suites
// running in parallel, so a test must never restart that one.
class private_pg_server {
 public:
  private_pg_server() : script_(required_env("SPOOL_TEST_PG_SCRIPT")) {
    script("start");
    uri_ = read_text(dir_.path() / "uri");
    while (!uri_.empty() && uri_.back() == '\n') uri_.pop_back();
  }
  ~private_pg_server() {
    try {
      script("stop");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "could not stop the private PostgreSQL server: " << e.what();
    }
    // stop deletes the data directory in the background, so removing the
    // temp dir at once can race it and leave the directory behind.
    std::error_code ec;
    for (int attempt = 0; attempt < 100 && std::filesystem::exists(dir_.path(), ec); ++attempt) {
      std::filesystem::remove_all(dir_.path(), ec);
      if (std::filesystem::exists(dir_.path(), ec)) std::this_thread::sleep_for(100ms);
    }
  }
  private_pg_server(const private_pg_server&) = delete;
  private_pg_server& operator=(const private_pg_server&) = delete;

  // Restarts in place (same data and port); mode is fast or immediate.
  void restart(const std::string& mode) { script("restart", mode); }
  [[nodiscard]] const std::string& uri() const { return uri_; }

 private:
  void script(const std::string& command, const std::string& mode = {}) {
    (void)run(sh_quote(script_) + " " + command + " " + sh_quote(dir_.path().string()) +
              (mode.empty() ? "" : " " + mode));
  }
  temp_dir dir_;  // declared first: removed only after the destructor stopped the server
  std::string script_;
  std::string uri_;
};

envelope plain_envelope(std::string id) {
  envelope e;
  e.id = std::move(id);
  e.topic = "t";
  e.payload = "p";
  return e;
}

// Scenario 16, on a server of the test's own: a restart (a fast shutdown,
// then an immediate one, which ends sessions like a crash) kills the backend
// behind the store's pooled connection. ping reports that as unavailable or
// in_doubt, never anything else, and recovers on the same store and database
// handle; the row written before the restart is then claimed and delivered.
TEST(outbox_restart_postgres, after_a_restart_ping_recovers_and_the_row_written_before_it_is_delivered) {
  private_pg_server server;
  // The throwaway cluster runs synchronous_commit = off, so an immediate
  // shutdown could drop commits whose WAL was still in shared memory. This
  // test is about reconnecting, not about a test server's durability.
  pg_exec(server.uri(), "ALTER DATABASE postgres SET synchronous_commit = on");
  auto db = database::open(server.uri());
  outbox::migrate(db);
  store s(db);
  writer w(db);
  for (const std::string mode : {"fast", "immediate"}) {
    SCOPED_TRACE(mode + " restart");
    const std::string id = "written-before-a-" + mode + "-restart";
    {
      pg::tx tx(db);
      (void)w.insert(tx, plain_envelope(id));
      tx.commit();
    }
    s.ping();  // the pooled connection works before the restart
    server.restart(mode);

    int failures = 0;
    bool recovered = false;
    for (int attempt = 0; attempt < 50 && !recovered; ++attempt) {
      try {
        s.ping();
        recovered = true;
      } catch (const spool::error& e) {
        ++failures;
        EXPECT_TRUE(e.code() == errc::unavailable || e.code() == errc::in_doubt) << e.what();
        std::this_thread::sleep_for(100ms);
      }
    }
    ASSERT_TRUE(recovered) << "ping did not recover within 50 attempts";
    // The connection pooled before the restart had lost its backend, so at
    // least the first ping after it had to fail.
    EXPECT_GE(failures, 1);

    const auto got = s.claim("relay", 10, 30s);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].message.id, id);
    s.mark_delivered(got[0].ref);
    EXPECT_EQ(*db.exec("SELECT state FROM outbox_messages WHERE id = $1", {id}).at(0).at(0), "delivered");
  }
}

// Every object in a database's non-system schemas, one line each: schemas,
// relations (tables, indexes, sequences, views), columns, functions, types,
// triggers, constraints, extensions and event triggers.
std::set<std::string> schema_inventory(const std::string& uri) {
  const auto rows = pg_query(uri, R"(
    WITH ns AS (SELECT oid, nspname FROM pg_namespace
                WHERE nspname NOT IN ('pg_catalog', 'information_schema')
                  AND nspname NOT LIKE 'pg\_toast%' AND nspname NOT LIKE 'pg\_temp%')
    SELECT 'schema ' || nspname FROM ns
    UNION ALL SELECT 'relation(' || c.relkind::text || ') ' || ns.nspname || '.' || c.relname
      FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
    UNION ALL SELECT 'column ' || ns.nspname || '.' || c.relname || '.' || a.attname || ' '
                     || format_type(a.atttypid, a.atttypmod)
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN ns ON ns.oid = c.relnamespace
      WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
    UNION ALL SELECT 'function ' || ns.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
      FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
    UNION ALL SELECT 'type ' || ns.nspname || '.' || t.typname FROM pg_type t JOIN ns ON ns.oid = t.typnamespace
    UNION ALL SELECT 'trigger ' || ns.nspname || '.' || c.relname || '.' || tg.tgname
      FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN ns ON ns.oid = c.relnamespace
      WHERE NOT tg.tgisinternal
    UNION ALL SELECT 'constraint ' || ns.nspname || '.' || co.conname FROM pg_constraint co JOIN ns ON ns.oid = co.connamespace
    UNION ALL SELECT 'extension ' || extname FROM pg_extension
    UNION ALL SELECT 'event trigger ' || evtname FROM pg_event_trigger)");
  std::set<std::string> out;
  for (const auto& r : rows) out.insert(*r.at(0));
  return out;
}

// pg_dump --schema-only without what differs between two databases of one
// schema: comment lines (they name the database), blank lines, and the
// \restrict / \unrestrict lines newer pg_dump releases add with a random key.
std::string schema_dump(const std::string& uri) {
  std::istringstream in(run(sh_quote(pg_tool("pg_dump")) + " --schema-only --no-owner -d " + sh_quote(uri)));
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("--", 0) == 0 || line.rfind("\\restrict", 0) == 0 ||
        line.rfind("\\unrestrict", 0) == 0) {
      continue;
    }
    out += line + '\n';
  }
  return out;
}

// Scenario 22 (PostgreSQL), for every component (mq, ops, outbox): database A
// is migrated by `spool migrate`; B gets the `spool migrate --print` output
// applied by psql, as an external runner would apply it. Both end with the
// same pg_dump --schema-only and the same ledger. Reverting every version,
// newest first, with `spool migrate --revert … --confirm-data-loss` then
// leaves, on both, only what existed before and what the down sections keep
// on purpose.
TEST(outbox_migrate_cli_postgres,
     migrate_print_applied_by_psql_equals_migrate_and_reverting_every_version_leaves_only_what_is_kept) {
  const std::string cli = required_env("SPOOL_CLI");
  const std::string a = make_pg_database("migrate_cli_a");
  const std::string b = make_pg_database("migrate_cli_b");
  const auto fresh = schema_inventory(a);
  ASSERT_EQ(schema_inventory(b), fresh);

  (void)run(sh_quote(cli) + " migrate --db " + sh_quote(a));
  temp_dir dir;
  const auto script = dir.path() / "migrations.sql";
  (void)run(sh_quote(cli) + " migrate --print --db " + sh_quote(b) + " > " + sh_quote(script.string()));
  (void)run(sh_quote(pg_tool("psql")) + " -X -q -v ON_ERROR_STOP=1 -d " + sh_quote(b) + " -f " +
            sh_quote(script.string()));

  const std::string dump = schema_dump(a);
  EXPECT_NE(dump.find("CREATE TABLE public.outbox_messages "), std::string::npos) << dump;
  EXPECT_NE(dump.find("CREATE TABLE public.queue_messages "), std::string::npos) << dump;
  EXPECT_NE(dump.find("CREATE TABLE public.ops_queue "), std::string::npos) << dump;
  EXPECT_EQ(schema_dump(b), dump);

  const std::string ledger_sql =
      "SELECT component, target, version, checksum FROM spool_schema_migrations ORDER BY 1, 2, 3";
  const auto ledger = pg_query(a, ledger_sql);
  EXPECT_EQ(pg_query(b, ledger_sql), ledger);
  // Newest first within a component, components in reverse dependency order.
  std::vector<std::string> versions;
  std::set<std::string> components;
  for (const std::string component : {"outbox", "ops", "mq_catalog", "mq"}) {
    for (auto it = ledger.rbegin(); it != ledger.rend(); ++it) {
      if (*(*it)[0] == component) versions.push_back(component + "/" + *(*it)[2]);
    }
  }
  for (const auto& r : ledger) components.insert(*r[0]);
  // A new component must be added to the revert order above.
  ASSERT_EQ(components, (std::set<std::string>{"mq", "mq_catalog", "ops", "outbox"}));

  // Kept on purpose: ops/1 and ops/2 never drop the op-queue table, its
  // indexes or its dedup column, which filex may have created (op-queue.md
  // §2.3); the ledger is shared by every component, and only its rows go.
  // ops/3's lease columns and index are Spool's own and must go.
  std::set<std::string> kept;
  for (const auto& line : schema_inventory(a)) {
    const bool ops_or_ledger = line.find("ops_queue") != std::string::npos ||
                               line.find("spool_schema_migrations") != std::string::npos;
    const bool ops_3 = line.find(".lease_owner ") != std::string::npos ||
                       line.find(".lease_token ") != std::string::npos ||
                       line.find(".heartbeat_at ") != std::string::npos ||
                       line.find("idx_ops_queue_running_heartbeat") != std::string::npos;
    if (ops_or_ledger && !ops_3) kept.insert(line);
  }
  ASSERT_FALSE(kept.empty());
  for (const auto& [name, uri] : {std::pair<std::string, std::string>{"A", a}, {"B", b}}) {
    SCOPED_TRACE("database " + name);
    for (const auto& v : versions) {
      (void)run(sh_quote(cli) + " migrate --revert " + v + " --confirm-data-loss --db " + sh_quote(uri));
    }
    EXPECT_EQ(pg_query(uri, "SELECT count(*) FROM spool_schema_migrations").at(0).at(0), "0");
    std::set<std::string> left;
    for (const auto& line : schema_inventory(uri)) {
      if (fresh.count(line) == 0) left.insert(line);
    }
    EXPECT_EQ(left, kept);
  }
}

}  // namespace
}  // namespace spool::test
