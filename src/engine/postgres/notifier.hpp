// The process's shared LISTEN connection for one database (DESIGN.md,
// Runtimes): one thread, one connection, every notification on the channels
// it listens to is passed to on_event. After it starts listening on a channel
// (first use, or again after a reconnect) it reports a "look now" event,
// because notifications sent before the LISTEN took effect are lost and
// pollers must look at once. Pollers keep polling at their interval
// regardless: NOTIFY is only a hint.
// Thread safety: listen() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

namespace spool::pg::detail {

class notifier {
 public:
  // One notification; on_event(nullptr) means "look now" (see above).
  struct event {
    std::string channel;
    std::string payload;
  };
  // connect() opens a fresh connection (throws spool::error when it cannot);
  // on_event runs on the listener's thread and must be short.
  notifier(std::function<std::unique_ptr<class connection>()> connect,
           std::function<void(const event*)> on_event);
  ~notifier();
  notifier(const notifier&) = delete;
  notifier& operator=(const notifier&) = delete;

  // Adds a channel; idempotent. Returns at once: the listener applies it.
  void listen(const std::string& channel);

  // Whether the listening connection is up now, and how many times it was
  // opened again after losing one (a terminated backend, a restart).
  [[nodiscard]] bool connected() const noexcept { return connected_.load(); }
  [[nodiscard]] std::uint64_t reconnects() const noexcept { return reconnects_.load(); }

 private:
  void run(const std::stop_token& stop);

  std::function<std::unique_ptr<connection>()> connect_;
  std::function<void(const event*)> on_event_;
  std::mutex mutex_;
  std::set<std::string> channels_;
  bool channels_changed_ = false;
  std::atomic<bool> connected_{false};
  std::atomic<std::uint64_t> reconnects_{0};
  std::jthread thread_;  // last: starts after the members it reads
};

}  // namespace spool::pg::detail
