#include "faults/faults_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>

#include "spool/pg.hpp"

namespace spool::test::faults {

using namespace std::chrono_literals;

// ---- processes ----

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (const char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string run(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  std::array<char, 4096> buf{};
  while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    throw std::runtime_error(fmt::format("{} failed (status {}):\n{}", command, WEXITSTATUS(status), out));
  }
  return out;
}

std::string required_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(
        fmt::format("${} is not set: run this test through ctest (tests/CMakeLists.txt sets it)", name));
  }
  return v;
}

std::string read_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error("cannot read " + file.string());
  return line;
}

std::uint64_t fault_seed() {
  if (const char* s = std::getenv("SPOOL_TEST_FAULTS_SEED"); s != nullptr && *s != '\0') {
    return std::stoull(s);
  }
  return std::random_device{}();
}

namespace {

// stop deletes a cluster's data in the background, so removing the temp dir
// at once can race it and leave the directory behind: retry a while.
void remove_eventually(const std::filesystem::path& dir) {
  std::error_code ec;
  for (int attempt = 0; attempt < 100 && std::filesystem::exists(dir, ec); ++attempt) {
    std::filesystem::remove_all(dir, ec);
    if (std::filesystem::exists(dir, ec)) std::this_thread::sleep_for(100ms);
  }
}

}  // namespace

private_pg_server::private_pg_server(bool durable) : script_(required_env("SPOOL_TEST_PG_SCRIPT")) {
  script("start", {}, durable);  // pg_server.sh tears down what it started when start fails
  uri_ = read_line(dir_.path() / "uri");
}

private_pg_server::~private_pg_server() {
  try {
    script("stop");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "could not stop the private PostgreSQL server: " << e.what();
  }
  remove_eventually(dir_.path());
}

void private_pg_server::restart(const std::string& mode) { script("restart", mode); }

void private_pg_server::script(const std::string& command, const std::string& mode, bool durable) {
  (void)run(fmt::format("{}{} {} {}{}", durable ? "SPOOL_PG_DURABLE=1 " : "", sh_quote(script_), command,
                        sh_quote(dir_.path().string()), mode.empty() ? "" : " " + mode));
}

replica_pair::replica_pair() : script_(required_env("SPOOL_TEST_PG_REPLICA_SCRIPT")) {
  try {
    script("start-primary");
    script("start-standby");
    multi_uri_ = read_line(dir_.path() / "multi_uri");
    primary_uri_ = read_line(dir_.path() / "primary" / "uri");
    standby_uri_ = read_line(dir_.path() / "standby" / "uri");
    standby_port_ = read_line(dir_.path() / "standby" / "port");
  } catch (...) {
    // The destructor does not run for a constructor that throws.
    try {
      script("stop");
    } catch (const std::exception&) {
    }
    remove_eventually(dir_.path());
    throw;
  }
}

replica_pair::~replica_pair() {
  try {
    script("stop");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "could not stop the primary and the standby: " << e.what();
  }
  remove_eventually(dir_.path());
}

void replica_pair::stop_primary(const std::string& mode) { script("stop-primary", mode); }
void replica_pair::promote() { script("promote"); }

void replica_pair::script(const std::string& command, const std::string& mode) {
  (void)run(fmt::format("{} {} {}{}", sh_quote(script_), command, sh_quote(dir_.path().string()),
                        mode.empty() ? "" : " " + mode));
}

}  // namespace spool::test::faults
