// A full disk (issue 17, "Storage"): on a tmpfs of a few megabytes that the
// test mounts itself (CI runs as root; elsewhere these tests fail, naming
// that), the database runs out of space while Spool writes.
//
// PostgreSQL: Spool's tables live in a tablespace on the tmpfs (the WAL stays
// on the main disk, as a data volume filling up does), a filler table takes
// the rest, and the fault workload runs on: every failure is unavailable or
// in_doubt (SQLSTATE 53100 is `disk_full`, not a database_error), nothing
// acknowledged is lost, and the same objects resume once the filler is
// dropped. SQLite: the database file and its WAL on the tmpfs, a filler file
// takes the rest; a publish fails as unavailable or, at its commit, in_doubt,
// and the file is sound (integrity_check) and works again once there is room.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "faults/faults_support.hpp"
#include "spool/migrate.hpp"
#include "spool/sqlite.hpp"

namespace spool::test::faults {
namespace {

using namespace std::chrono_literals;

// A tmpfs of the given size on a fresh directory every user can reach,
// unmounted and removed by the destructor (also when an assertion failed).
class small_tmpfs {
 public:
  explicit small_tmpfs(const std::string& size) {
    std::string tmpl = "/tmp/spool-full-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
    const std::string options = "size=" + size + ",mode=0777";
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      std::filesystem::remove(dir_);
      throw std::runtime_error(
          fmt::format("cannot mount a {} tmpfs on {} ({}): the disk-full tests need root (CI runs as root)",
                      size, dir_, why));
    }
  }
  ~small_tmpfs() {
    ::umount2(dir_.c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  small_tmpfs(const small_tmpfs&) = delete;
  small_tmpfs& operator=(const small_tmpfs&) = delete;

  [[nodiscard]] const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

// Writes a file in chunks until the file system refuses (ENOSPC): the disk is
// full. Returns the bytes written.
std::uintmax_t fill_with_a_file(const std::string& file) {
  std::uintmax_t total = 0;
  for (const std::size_t chunk : {std::size_t{64} << 10, std::size_t{4} << 10, std::size_t{512}}) {
    std::ofstream out(file, std::ios::binary | std::ios::app);
    const std::string block(chunk, 'x');
    for (;;) {
      out.write(block.data(), static_cast<std::streamsize>(block.size()));
      out.flush();
      if (!out) break;
      total += chunk;
    }
  }
  return total;
}

TEST(faults_disk_full_postgres,
     a_full_tablespace_fails_writes_as_unavailable_and_work_resumes_when_space_returns) {
  private_pg_server server;
  small_tmpfs fs("16m");
  // The tablespace's directory must belong to the server's system user.
  struct stat data {};
  const auto data_dir = pg_query(server.uri(), "SHOW data_directory").at(0).at(0).value();
  ASSERT_EQ(::stat(data_dir.c_str(), &data), 0) << data_dir;
  ASSERT_EQ(::chown(fs.path().c_str(), data.st_uid, data.st_gid), 0) << std::strerror(errno);
  pg_exec(server.uri(), fmt::format("CREATE TABLESPACE spool_small LOCATION '{}'", fs.path()));
  pg_exec(server.uri(), "CREATE DATABASE disk_full");
  pg_exec(server.uri(), "ALTER DATABASE disk_full SET default_tablespace = spool_small");
  const std::string uri = pg_uri_for(server.uri(), "disk_full");
  struct drop_tablespace {  // before the tmpfs goes: the server must not keep files on it
    std::string uri;
    ~drop_tablespace() {
      try {
        pg_exec(uri, "DROP DATABASE IF EXISTS disk_full WITH (FORCE)");
        pg_exec(uri, "DROP TABLESPACE IF EXISTS spool_small");
      } catch (const std::exception&) {
      }
    }
  } cleanup{server.uri()};

  auto db = database::open(uri);
  spool::migrate(db);
  workload w(db, "full");
  w.start();
  ASSERT_TRUE(w.wait_for_progress(5, 60s)) << "the workload made no progress before the disk filled";

  // Fill the rest: large rows (stored uncompressed), then small ones.
  pg_exec(uri, "CREATE TABLE filler (b bytea); ALTER TABLE filler ALTER COLUMN b SET STORAGE EXTERNAL");
  int big = 0, small = 0;
  std::string refused;
  for (; big < 10000; ++big) {
    try {
      pg_exec(uri,
              "INSERT INTO filler SELECT decode(string_agg(md5(random()::text), ''), 'hex') "
              "FROM generate_series(1, 4096)");
    } catch (const std::exception& e) {
      refused = e.what();
      break;
    }
  }
  for (; small < 100000; ++small) {
    try {
      pg_exec(uri,
              "INSERT INTO filler SELECT decode(md5(random()::text), 'hex') FROM generate_series(1, 64)");
    } catch (const std::exception&) {
      break;
    }
  }
  ASSERT_NE(refused.find("No space left on device"), std::string::npos)
      << "the filler stopped for another reason: " << refused;
  std::this_thread::sleep_for(3s);  // the workload runs into the full disk

  pg_exec(uri, "DROP TABLE filler");  // the space returns
  EXPECT_TRUE(w.wait_for_progress(5, 60s)) << "the workload did not resume when space returned";
  w.stop();
  w.expect_same_objects_recover();
  w.drain();
  const auto r = w.verify(
      fmt::format("tablespace on a 16 MB tmpfs filled ({} large and {} small filler rows)", big, small));
  EXPECT_EQ(r.lost, 0u);
  EXPECT_EQ(r.redelivered_after_ack, 0u);
  // verify() failed every call that ended otherwise than unavailable or in_doubt.
  EXPECT_GT(r.reasons.count("unavailable/disk_full") ? r.reasons.at("unavailable/disk_full") : 0u, 0u)
      << "no call met the full disk as unavailable/disk_full";
  for (const auto& [reason, n] : r.reasons) fmt::print("[faults]   {} × {}\n", n, reason);
}

mq::message full_message(const std::string& id) {
  mq::message m;
  m.id = id;
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.test/full";
  m.body = std::string(8 << 10, 'b');  // pages fill fast
  return m;
}

TEST(faults_disk_full_sqlite, a_full_disk_fails_publishes_typed_loses_nothing_and_leaves_a_sound_file) {
  small_tmpfs fs("4m");
  const std::string file = fs.path() + "/spool.db";
  auto db = database::open("sqlite:" + file);
  spool::migrate(db);
  mq::queue q(db, {.name = "full"});
  (void)q.publish(full_message("before"));

  const auto filled = fill_with_a_file(fs.path() + "/filler");
  ASSERT_GT(filled, 0u);
  std::set<std::string> acked{"before"}, absent, doubt;
  std::map<std::string, int> reasons;
  std::vector<std::string> unexpected;
  for (int i = 0; i < 400 && absent.size() + doubt.size() < 20; ++i) {
    const auto id = fmt::format("m-{}", i);
    try {
      (void)q.publish(full_message(id), 0s, call_options::within(10s));
      acked.insert(id);
    } catch (const spool::error& e) {
      ++reasons[fmt::format("{}/{}", to_string(e.code()), e.reason())];
      if (e.code() == errc::unavailable) {
        absent.insert(id);
      } else if (e.code() == errc::in_doubt) {
        doubt.insert(id);
      } else {
        unexpected.push_back(e.what());
      }
    }
  }
  EXPECT_TRUE(unexpected.empty()) << unexpected.size() << " publishes failed otherwise, e.g. "
                                  << unexpected.front();
  EXPECT_GT(absent.size() + doubt.size(), 0u) << "no publish met the full disk";
  for (const auto& [reason, n] : reasons) {
    EXPECT_TRUE(reason.find("disk_full") != std::string::npos || reason.find("io_error") != std::string::npos)
        << n << " publishes failed with " << reason;
  }

  std::filesystem::remove(fs.path() + "/filler");  // the space returns
  (void)q.publish(full_message("after"), 0s, call_options::within(10s));
  acked.insert("after");
  std::set<std::string> seen;
  for (int round = 0; round < 100; ++round) {
    const auto got = q.poll(50, call_options::within(10s));
    if (got.empty()) break;
    for (const auto& d : got) {
      seen.insert(d.body.id);
      q.ack(d.receipt, {}, call_options::within(10s));
    }
  }
  for (const auto& id : acked) EXPECT_TRUE(seen.count(id)) << "acknowledged publish " << id << " was lost";
  for (const auto& id : absent)
    EXPECT_FALSE(seen.count(id)) << "publish " << id << " reported unavailable was stored";
  EXPECT_EQ(sqlite_query(file, "PRAGMA integrity_check").at(0).at(0), "ok");
  fmt::print(
      "[faults] SQLite on a 4 MB tmpfs: {} acknowledged, {} unavailable, {} in doubt ({} stored)\n",
      acked.size(), absent.size(), doubt.size(),
      std::count_if(doubt.begin(), doubt.end(), [&](const std::string& id) { return seen.count(id) > 0; }));
}

}  // namespace
}  // namespace spool::test::faults
