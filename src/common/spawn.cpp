#include "common/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "spool/error.hpp"

extern char** environ;

namespace spool::detail {

namespace {

// posix_spawn's C structures, destroyed on every path out.
struct spawn_setup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  spawn_setup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~spawn_setup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
};

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

void unique_fd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

pipe_ends make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw error(errc::unavailable, std::string("pipe: ") + std::strerror(errno), "pipe_failed");
  }
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

pid_t spawn_process(const spawn_options& options) {
  if (options.argv.empty()) throw error(errc::invalid_argument, "spawn_process: empty argv");
  spawn_setup s;
  const int stdio[] = {options.stdin_fd, options.stdout_fd, options.stderr_fd};
  for (int target = 0; target < 3; ++target) {
    if (stdio[target] >= 0) posix_spawn_file_actions_adddup2(&s.actions, stdio[target], target);
  }
  // The caller may block SIGINT/SIGTERM (a worker waiting for shutdown) or
  // ignore SIGPIPE; the child must not inherit either.
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigmask(&s.attr, &empty);
  posix_spawnattr_setsigdefault(&s.attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.own_process_group) {
    posix_spawnattr_setpgroup(&s.attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&s.attr, flags);

  const auto argv = pointers(options.argv);
  const auto env_strings = options.env ? std::vector<std::string>() : current_environment();
  const auto envp = pointers(options.env ? *options.env : env_strings);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], &s.actions, &s.attr, argv.data(), envp.data());
  if (rc != 0) {
    throw error(errc::unavailable, "cannot start " + options.argv[0] + ": " + std::strerror(rc),
                "spawn_failed");
  }
  return pid;
}

}  // namespace spool::detail
