// Running the `spool` binary ($SPOOL_CLI, set by CTest) from the CLI tests:
// one-shot commands (run_cli), long-running ones in the background
// (cli_process, e.g. `spool ops work`), and the checks of the CLI contract
// (DESIGN.md, Shared contracts → CLI) that several suites share.
//
// Output is captured through files, never pipes: a child that writes more than
// a pipe holds while the test is not reading would block, and a test that
// waits for it would hang.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace spool::test {

// The engine a parameterised CLI suite runs on.
enum class engine_kind { sqlite, postgres };

// The test-name suffix of an engine parameter (a ::testing::TestParamInfo).
template <class Info>
[[nodiscard]] std::string engine_test_name(const Info& info) {
  return info.param == engine_kind::sqlite ? "sqlite" : "postgres";
}

struct cli_result {
  int exit_code = -1;  // 128 + signal when the process was killed by one
  std::string out;
  std::string err;
};

// $SPOOL_CLI; throws std::runtime_error when it is not set (the tests run
// through ctest, which sets it).
[[nodiscard]] std::string cli_path();

// The whole file, byte for byte; "" when it does not exist (yet).
[[nodiscard]] std::string read_file(const std::filesystem::path& p);

// Runs the binary with args (no shell, so no quoting), stdin from input, and
// waits for it.
cli_result run_cli(const std::vector<std::string>& args, const std::string& input = "");

// run_cli with cwd as the binary's working directory (empty: the test's own),
// for what the CLI resolves against it, such as the default --db.
cli_result run_cli_in(const std::filesystem::path& cwd, const std::vector<std::string>& args,
                      const std::string& input = "");

// args followed by more.
[[nodiscard]] std::vector<std::string> with(std::vector<std::string> args,
                                            const std::vector<std::string>& more);

[[nodiscard]] int count_lines(const std::string& s);

// A failure as the contract defines it: the exit code, nothing on stdout and
// one stderr line starting with prefix.
void expect_failure(const cli_result& r, int exit_code, const std::string& prefix);

// Success with exactly one JSON document on stdout, parsed.
nlohmann::json expect_json(const cli_result& r);

// A waitpid status as a shell reports it: the exit code, or 128 + signal.
[[nodiscard]] int exit_code_of(int wait_status);

// The binary running in the background, stdin from /dev/null, stdout and
// stderr in dir/NAME.out and dir/NAME.err. It runs in a process group of its
// own (its pid is the group id), so the whole group can be signalled with
// kill(-pid, …) without touching the test. The destructor SIGKILLs the group
// and reaps the process if the test has not, so a failed assertion never
// leaves a worker running.
//
// Commands that `spool ops work` / `spool mq work` run are NOT in this group:
// the CLI puts each one in a group of its own (cli/exec_command.cpp), so that
// its shutdown SIGTERM reaches the command and not only /bin/sh. Use
// kill_process_group() for those.
class cli_process {
 public:
  cli_process(const std::vector<std::string>& args, const std::filesystem::path& dir,
              const std::string& name = "work");
  // Any other program (a test tool, or a wrapper such as faketime) run the
  // same way: exe is a path, args do not include argv[0].
  cli_process(const std::string& exe, const std::vector<std::string>& args, const std::filesystem::path& dir,
              const std::string& name);
  ~cli_process();
  cli_process(cli_process&& other) noexcept;
  cli_process& operator=(cli_process&&) = delete;
  cli_process(const cli_process&) = delete;
  cli_process& operator=(const cli_process&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] std::string out() const { return read_file(out_); }
  [[nodiscard]] std::string err() const { return read_file(err_); }

  // Sends sig to the process alone (its commands get what it decides) and
  // waits for it; returns exit_code_of its status.
  int stop(int sig);
  // Sends sig to the whole process group and waits for the process.
  int kill_group(int sig);
  // True while the process has not exited (reaps it when it has).
  [[nodiscard]] bool running();

 private:
  int reap();

  pid_t pid_ = 0;
  bool reaped_ = false;
  int status_ = 0;
  std::filesystem::path out_, err_;
};

// SIGKILLs every process in group pgid and reaps those that are this
// process's children (see child_subreaper). A group that is already gone is
// fine.
void kill_process_group(pid_t pgid);

// True while any process of group pgid exists. A zombie counts, so reap what
// can be reaped first (kill_process_group does).
[[nodiscard]] bool process_group_exists(pid_t pgid);

// Makes this process the reaper of its orphaned descendants (Linux
// PR_SET_CHILD_SUBREAPER) while it lives, and restores the previous setting.
// When a test SIGKILLs a `spool ops work`, the command it was running is
// orphaned; with this on, the orphan becomes the test's child, so the test
// can kill it, reap it and prove it gone instead of leaving it to whatever
// runs as pid 1.
class child_subreaper {
 public:
  child_subreaper();
  ~child_subreaper();
  child_subreaper(const child_subreaper&) = delete;
  child_subreaper& operator=(const child_subreaper&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace spool::test
