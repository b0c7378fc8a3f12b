#include "cli_runner.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/test_db.hpp"

extern char** environ;

namespace spool::test {

namespace {

// Starts exe with args; stdin/stdout/stderr opened from the given files. With
// own_group the child leads a new process group. A non-empty cwd is the
// child's working directory (entered after the files are opened).
pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::filesystem::path& in,
            const std::filesystem::path& out, const std::filesystem::path& err, bool own_group,
            const std::filesystem::path& cwd = {}) {
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (own_group) {
    posix_spawnattr_setpgroup(&attr, 0);  // 0: the child's pid becomes the group id
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  }
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot run " + exe + ": " + std::strerror(rc));
  return pid;
}

int wait_for_exit(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

std::string cli_path() {
  const char* p = std::getenv("SPOOL_CLI");
  if (p == nullptr || *p == '\0')
    throw std::runtime_error("SPOOL_CLI is not set: run the tests through ctest");
  return p;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

cli_result run_cli(const std::vector<std::string>& args, const std::string& input) {
  return run_cli_in({}, args, input);
}

cli_result run_cli_in(const std::filesystem::path& cwd, const std::vector<std::string>& args,
                      const std::string& input) {
  static const temp_dir io;  // one scratch directory per process
  const auto in = io.path() / "stdin", out = io.path() / "stdout", err = io.path() / "stderr";
  std::ofstream(in, std::ios::binary) << input;
  const pid_t pid = spawn(cli_path(), args, in, out, err, false, cwd);
  cli_result r;
  r.exit_code = exit_code_of(wait_for_exit(pid));
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

int count_lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

void expect_failure(const cli_result& r, int exit_code, const std::string& prefix) {
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

nlohmann::json expect_json(const cli_result& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;  // one document
  return nlohmann::json::parse(r.out);
}

int exit_code_of(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

// ---- cli_process ----

cli_process::cli_process(const std::vector<std::string>& args, const std::filesystem::path& dir,
                         const std::string& name)
    : cli_process(cli_path(), args, dir, name) {}

cli_process::cli_process(const std::string& exe, const std::vector<std::string>& args,
                         const std::filesystem::path& dir, const std::string& name)
    : out_(dir / (name + ".out")), err_(dir / (name + ".err")) {
  pid_ = spawn(exe, args, "/dev/null", out_, err_, true);
}

cli_process::cli_process(cli_process&& other) noexcept
    : pid_(other.pid_),
      reaped_(other.reaped_),
      status_(other.status_),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)) {
  other.reaped_ = true;  // the moved-from object owns nothing
}

cli_process::~cli_process() {
  if (!reaped_) (void)kill_group(SIGKILL);
}

int cli_process::reap() {
  if (!reaped_) {
    status_ = wait_for_exit(pid_);
    reaped_ = true;
  }
  return exit_code_of(status_);
}

int cli_process::stop(int sig) {
  if (!reaped_) ::kill(pid_, sig);
  return reap();
}

int cli_process::kill_group(int sig) {
  // Only while unreaped: once reaped, the pid (and group id) may be reused.
  if (!reaped_) ::kill(-pid_, sig);
  return reap();
}

bool cli_process::running() {
  if (reaped_) return false;
  int status = 0;
  pid_t w = 0;
  while ((w = waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (w == 0) return true;
  status_ = status;
  reaped_ = true;
  return false;
}

// ---- process groups ----

void kill_process_group(pid_t pgid) {
  if (pgid <= 1) throw std::invalid_argument("kill_process_group: not a process group id");
  for (;;) {
    if (::kill(-pgid, SIGKILL) != 0 && errno == ESRCH) return;
    int status = 0;
    const pid_t w = waitpid(-pgid, &status, 0);
    // ECHILD: what is left of the group is not ours to reap (and is dead or
    // dying: SIGKILL cannot be caught).
    if (w < 0 && errno == ECHILD) return;
  }
}

bool process_group_exists(pid_t pgid) { return ::kill(-pgid, 0) == 0 || errno == EPERM; }

child_subreaper::child_subreaper() {
  int previous = 0;
  if (prctl(PR_GET_CHILD_SUBREAPER, &previous) == 0) previous_ = previous;
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    throw std::runtime_error(std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + std::strerror(errno));
  }
}

child_subreaper::~child_subreaper() { prctl(PR_SET_CHILD_SUBREAPER, previous_); }

}  // namespace spool::test
