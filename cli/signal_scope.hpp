// Signals for the CLI's long-running commands (mq work, ops work, relay).
#pragma once

#include <pthread.h>

#include <csignal>
#include <initializer_list>

namespace spool::cli {

// Blocks the given signals in this thread (and so in every thread it starts
// afterwards) so that wait() can take them synchronously with sigwait, and
// ignores SIGPIPE (a command or a reader that closed its end must not kill
// us). Restores both on destruction. Construct it before starting threads.
// Thread safety: wait() from the constructing thread only.
class signal_scope {
 public:
  explicit signal_scope(std::initializer_list<int> signals = {SIGINT, SIGTERM}) {
    sigemptyset(&set_);
    for (int s : signals) sigaddset(&set_, s);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    old_pipe_ = ::signal(SIGPIPE, SIG_IGN);
  }
  ~signal_scope() {
    ::signal(SIGPIPE, old_pipe_);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  signal_scope(const signal_scope&) = delete;
  signal_scope& operator=(const signal_scope&) = delete;

  // Blocks until one of the signals arrives; returns it.
  int wait() {
    int sig = 0;
    sigwait(&set_, &sig);
    return sig;
  }

 private:
  sigset_t set_{}, old_{};
  void (*old_pipe_)(int) = nullptr;
};

}  // namespace spool::cli
