// Internal: starting a child process with posix_spawn, shared by the outbox's
// command sink (outbox/sinks/process.cpp) and the CLI's --exec
// (cli/exec_command.cpp), so both hand a child the same clean signal state.
// Thread safety: reentrant; each call owns the fds it makes.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spool::detail {

// Owns one file descriptor and closes it when reset or destroyed, so a throw
// between pipe() and the child's start leaks nothing.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  ~unique_fd() { reset(); }
  unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
  void reset() noexcept;

 private:
  int fd_ = -1;
};

struct pipe_ends {
  unique_fd read;
  unique_fd write;
};

// A pipe with both ends close-on-exec: a child sees only the ends dup'd onto
// its stdio, never another call's. Errors: unavailable ("pipe: <errno text>").
[[nodiscard]] pipe_ends make_pipe();

// This process's environment as "NAME=value" entries, in environ's order.
[[nodiscard]] std::vector<std::string> current_environment();

struct spawn_options {
  std::vector<std::string> argv;  // argv[0] searched in PATH unless it holds a '/'
  // "NAME=value" entries; unset: this process's environment.
  std::optional<std::vector<std::string>> env;
  // Dup'd onto the child's 0, 1 and 2, in that order (so stdout_fd = 2 means
  // our stderr even when stderr_fd replaces it); -1 leaves the fd inherited.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // A group of its own, so kill(-pid, …) reaches the child's children too.
  bool own_process_group = false;
};

// Starts the process and returns its pid; the caller reaps it (waitpid). The
// child starts with an empty signal mask and SIGPIPE, SIGINT and SIGTERM at
// their defaults, whatever this process blocks or ignores. Errors:
// invalid_argument (empty argv), unavailable ("cannot start <argv[0]>:
// <errno text>").
[[nodiscard]] pid_t spawn_process(const spawn_options& options);

}  // namespace spool::detail
