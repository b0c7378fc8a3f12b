#include "process.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string_view>

#include "common/spawn.hpp"

namespace spool::detail {

namespace {

// write(2) that never raises SIGPIPE in the process (a library must not rely
// on the application ignoring it).
ssize_t write_no_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  const ssize_t put = ::write(fd, data, size);
  const int saved = errno;
  if (put < 0 && saved == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return put;
}

}  // namespace

process_result run_process(const process_spec& spec, const std::stop_token& stop) {
  if (spec.argv.empty()) throw std::runtime_error("run_process: empty argv");
  auto [in_r, in_w] = make_pipe();
  auto [err_r, err_w] = make_pipe();

  // Ours without the variables spec.env sets, so each is set once.
  std::vector<std::string> env;
  for (std::string& e : current_environment()) {
    const std::string_view entry(e);
    bool overridden = false;
    for (const auto& [k, v] : spec.env) {
      if (entry.size() > k.size() && entry.substr(0, k.size()) == k && entry[k.size()] == '=')
        overridden = true;
    }
    if (!overridden) env.push_back(std::move(e));
  }
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);

  spawn_options so;
  so.argv = spec.argv;
  so.env = std::move(env);
  so.stdin_fd = in_r.get();
  so.stdout_fd = 2;  // its stdout → our stderr
  so.stderr_fd = err_w.get();
  so.own_process_group = true;  // signals reach its children too
  const pid_t pid = spawn_process(so);
  in_r.reset();  // our copies of the child's ends, or stderr never reaches EOF
  err_w.reset();

  process_result out;
  const auto started = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> termed;
  bool killed = false;
  auto enforce = [&] {
    const auto now = std::chrono::steady_clock::now();
    if (!termed) {
      const bool stop_now = stop.stop_requested();
      const bool late = spec.timeout && now - started >= *spec.timeout;
      if (stop_now || late) {
        out.stopped = stop_now && !late;
        out.timed_out = late;
        termed = now;
        ::kill(-pid, SIGTERM);
      }
    } else if (!killed && now - *termed >= spec.kill_grace) {
      killed = true;
      ::kill(-pid, SIGKILL);
    }
  };

  // Feed stdin and drain stderr together so neither pipe fills and blocks the
  // child; a child that does not read its input is fine (EPIPE, with SIGPIPE
  // blocked in this thread for the write and a pending one consumed).
  std::size_t written = 0;
  bool in_open = !spec.input.empty(), err_open = true;
  if (!in_open) in_w.reset();
  while (in_open || err_open) {
    enforce();
    pollfd fds[2];
    nfds_t n = 0;
    if (err_open) fds[n++] = {err_r.get(), POLLIN, 0};
    if (in_open) fds[n++] = {in_w.get(), POLLOUT, 0};
    const int pr = ::poll(fds, n, 50);
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].fd == err_r.get() && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        const ssize_t got = ::read(err_r.get(), buf, sizeof buf);
        if (got <= 0) {
          if (got < 0 && errno == EINTR) continue;
          err_open = false;
        } else if (out.stderr_head.size() < spec.stderr_head_bytes) {
          out.stderr_head.append(buf, std::min<std::size_t>(static_cast<std::size_t>(got),
                                                            spec.stderr_head_bytes - out.stderr_head.size()));
        }
      } else if (in_open && fds[i].fd == in_w.get() && (fds[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
        const ssize_t put =
            write_no_sigpipe(in_w.get(), spec.input.data() + written, spec.input.size() - written);
        if (put > 0) written += static_cast<std::size_t>(put);
        if ((put < 0 && errno != EINTR && errno != EAGAIN) || written == spec.input.size()) {
          in_w.reset();
          in_open = false;
        }
      }
    }
  }
  int status = 0;
  for (;;) {  // the process may outlive its stderr: keep enforcing stop and timeout
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    enforce();
    ::poll(nullptr, 0, 20);
  }
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

}  // namespace spool::detail
