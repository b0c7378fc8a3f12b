#include "exec_command.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>

#include "common/spawn.hpp"

namespace spool::cli {

command_result run_command(const std::string& command, const std::string& input,
                           const std::vector<std::pair<std::string, std::string>>& env) {
  return run_command(command, input, env, {}, std::chrono::milliseconds(0));
}

command_result run_command(const std::string& command, const std::string& input,
                           const std::vector<std::pair<std::string, std::string>>& env, const std::stop_token& stop,
                           std::chrono::milliseconds kill_grace) {
  const bool stoppable = stop.stop_possible();
  auto [in_r, in_w] = spool::detail::make_pipe();
  auto [err_r, err_w] = spool::detail::make_pipe();
  {
    // Our environment plus env, appended (a name already set appears twice).
    std::vector<std::string> env_strings = spool::detail::current_environment();
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    spool::detail::spawn_options so;
    so.argv = {"/bin/sh", "-c", command};
    so.env = std::move(env_strings);
    so.stdin_fd = in_r.get();
    so.stdout_fd = 2;  // its stdout → our stderr
    so.stderr_fd = err_w.get();
    // A stoppable command gets its own process group, so SIGTERM reaches the
    // command and not only /bin/sh.
    so.own_process_group = stoppable;
    const pid_t pid = spool::detail::spawn_process(so);
    // Our copies of the child's ends must go now, or stderr never reaches EOF.
    in_r.reset();
    err_w.reset();

    // Feed stdin and drain stderr together, so neither pipe can fill up and
    // block the child. A child that does not read its input is fine (EPIPE).
    std::size_t written = 0;
    std::string err;
    bool in_open = true, err_open = true;
    if (input.empty()) {
      in_w.reset();
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
      if (err_open) fds[n++] = {err_r.get(), POLLIN, 0};
      if (in_open) fds[n++] = {in_w.get(), POLLOUT, 0};
      const int pr = ::poll(fds, static_cast<nfds_t>(n), stoppable ? 50 : -1);
      if (pr < 0 && errno != EINTR) break;
      if (pr <= 0) continue;
      for (int i = 0; i < n; ++i) {
        if (fds[i].fd == err_r.get() && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          char buf[4096];
          const ssize_t got = ::read(err_r.get(), buf, sizeof buf);
          if (got <= 0) {
            err_open = false;
          } else {
            err.append(buf, static_cast<std::size_t>(got));
            ::write(2, buf, static_cast<std::size_t>(got));  // pass it through too
            if (err.size() > 65536) err.erase(0, err.size() - 4096);
          }
        } else if (fds[i].fd == in_w.get() && (fds[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
          const ssize_t put = ::write(in_w.get(), input.data() + written, input.size() - written);
          if (put > 0) written += static_cast<std::size_t>(put);
          if (put < 0 || written == input.size()) {
            in_w.reset();
            in_open = false;
          }
        }
      }
    }
    int status = 0;
    if (stoppable) {
      // The command may outlive its stderr: keep enforcing the stop token.
      // A pidfd becomes readable the moment the command exits, so the wait
      // ends then; without one (an old kernel), look again after 1 ms,
      // doubling to 50 ms (a fixed 50 ms pause cost every command 50 ms:
      // spool ops work ran 29 no-op commands a second).
      // (syscall: Debian 12's glibc declares pidfd_open without C linkage.)
      const spool::detail::unique_fd exited(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
      int pause_ms = 1;
      for (;;) {
        const pid_t w = ::waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR)) break;
        enforce_stop();
        if (exited.is_open()) {
          pollfd pfd{exited.get(), POLLIN, 0};
          ::poll(&pfd, 1, 50);
        } else {
          ::poll(nullptr, 0, pause_ms);
          pause_ms = std::min(pause_ms * 2, 50);
        }
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
