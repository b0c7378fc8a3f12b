#include "exec_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>

extern char** environ;

namespace spool::cli {

namespace {

struct fd_closer {
  int fd = -1;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

command_result run_command(const std::string& command, const std::string& input,
                           const std::vector<std::pair<std::string, std::string>>& env) {
  return run_command(command, input, env, {}, std::chrono::milliseconds(0));
}

command_result run_command(const std::string& command, const std::string& input,
                           const std::vector<std::pair<std::string, std::string>>& env, const std::stop_token& stop,
                           std::chrono::milliseconds kill_grace) {
  const bool stoppable = stop.stop_possible();
  int in_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  fd_closer in_w{in_pipe[1]}, err_r{err_pipe[0]};
  {
    fd_closer in_r{in_pipe[0]}, err_w{err_pipe[1]};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);  // its stdout → our stderr
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    // The child gets default signal handling and an empty mask, whatever the
    // worker (which blocks SIGINT/SIGTERM and ignores SIGPIPE) had.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    // A stoppable command gets its own process group, so SIGTERM reaches the
    // command and not only /bin/sh.
    if (stoppable) {
      posix_spawnattr_setpgroup(&attr, 0);
      flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attr, flags);

    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, const_cast<char**>(argv), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw std::runtime_error(std::string("cannot start /bin/sh: ") + std::strerror(rc));
    // Our copies of the child's ends must go now, or stderr never reaches EOF.
    ::close(in_r.fd);
    in_r.fd = -1;
    ::close(err_w.fd);
    err_w.fd = -1;

    // Feed stdin and drain stderr together, so neither pipe can fill up and
    // block the child. A child that does not read its input is fine (EPIPE).
    std::size_t written = 0;
    std::string err;
    bool in_open = true, err_open = true;
    if (input.empty()) {
      ::close(in_w.fd);
      in_w.fd = -1;
      in_open = false;
    }
    // Stop token: SIGTERM to the command's group, SIGKILL after kill_grace.
    std::optional<std::chrono::steady_clock::time_point> termed;
    bool killed = false;
    auto enforce_stop = [&] {
      if (!stoppable || !stop.stop_requested()) return;
      const auto now = std::chrono::steady_clock::now();
      if (!termed) {
        termed = now;
        ::kill(-pid, SIGTERM);
      } else if (!killed && now - *termed >= kill_grace) {
        killed = true;
        ::kill(-pid, SIGKILL);
      }
    };
    while (in_open || err_open) {
      enforce_stop();
      pollfd fds[2];
      int n = 0;
      if (err_open) fds[n++] = {err_r.fd, POLLIN, 0};
      if (in_open) fds[n++] = {in_w.fd, POLLOUT, 0};
      const int pr = ::poll(fds, static_cast<nfds_t>(n), stoppable ? 50 : -1);
      if (pr < 0 && errno != EINTR) break;
      if (pr <= 0) continue;
      for (int i = 0; i < n; ++i) {
        if (fds[i].fd == err_r.fd && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          char buf[4096];
          const ssize_t got = ::read(err_r.fd, buf, sizeof buf);
          if (got <= 0) {
            err_open = false;
          } else {
            err.append(buf, static_cast<std::size_t>(got));
            ::write(2, buf, static_cast<std::size_t>(got));  // pass it through too
            if (err.size() > 65536) err.erase(0, err.size() - 4096);
          }
        } else if (fds[i].fd == in_w.fd && (fds[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
          const ssize_t put = ::write(in_w.fd, input.data() + written, input.size() - written);
          if (put > 0) written += static_cast<std::size_t>(put);
          if (put < 0 || written == input.size()) {
            ::close(in_w.fd);
            in_w.fd = -1;
            in_open = false;
          }
        }
      }
    }
    int status = 0;
    if (stoppable) {
      // The command may outlive its stderr: keep enforcing the stop token.
      // Its exit usually follows the close of stderr within microseconds, so
      // look again after 1 ms, doubling to 50 ms: a fixed 50 ms pause cost
      // every command 50 ms (spool ops work ran 29 no-op commands a second).
      int pause_ms = 1;
      for (;;) {
        const pid_t w = ::waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) break;
        enforce_stop();
        ::poll(nullptr, 0, pause_ms);
        pause_ms = std::min(pause_ms * 2, 50);
      }
    } else {
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    command_result out;
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    const auto nl = err.rfind('\n');
    out.stderr_tail = nl == std::string::npos ? err : err.substr(nl + 1);
    return out;
  }
}

}  // namespace spool::cli
