// The process's shared LISTEN connection for one database (DESIGN.md,
// Runtimes): one thread, one connection, every notification on the channels
// it listens to raises the database's wake signal. It reconnects by itself
// and raises the signal after a reconnect, because notifications sent while
// it was away are lost and pollers must look at once. Pollers keep polling
// at their interval regardless: NOTIFY is only a hint.
// Thread safety: listen() may be called from any thread.
#pragma once

#include <functional>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

namespace spool::pg::detail {

class notifier {
 public:
  // connect() opens a fresh connection (throws spool::error when it cannot);
  // wake() is called for every notification and after every (re)connect.
  notifier(std::function<std::unique_ptr<class connection>()> connect, std::function<void()> wake);
  ~notifier();
  notifier(const notifier&) = delete;
  notifier& operator=(const notifier&) = delete;

  // Adds a channel; idempotent. Returns at once: the listener applies it.
  void listen(const std::string& channel);

 private:
  void run(const std::stop_token& stop);

  std::function<std::unique_ptr<connection>()> connect_;
  std::function<void()> wake_;
  std::mutex mutex_;
  std::set<std::string> channels_;
  bool channels_changed_ = false;
  std::jthread thread_;
};

}  // namespace spool::pg::detail
