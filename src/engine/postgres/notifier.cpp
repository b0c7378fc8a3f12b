#include "engine/postgres/notifier.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "common/identifier.hpp"
#include "common/log.hpp"
#include "engine/postgres/connection.hpp"
#include "spool/error.hpp"

namespace spool::pg::detail {

notifier::notifier(std::function<std::unique_ptr<connection>()> connect,
                   std::function<void(const event*)> on_event)
    : connect_(std::move(connect)),
      on_event_(std::move(on_event)),
      thread_([this](const std::stop_token& st) { run(st); }) {}

notifier::~notifier() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void notifier::listen(const std::string& channel) {
  std::lock_guard lock(mutex_);
  if (channels_.insert(channel).second) channels_changed_ = true;
}

void notifier::run(const std::stop_token& stop) {
  std::unique_ptr<connection> conn;
  std::set<std::string> listening;
  auto backoff = std::chrono::milliseconds(100);
  bool lost_one = false;  // a connection was up before: the next one is a reconnect
  const auto drop = [&] {
    if (conn) lost_one = true;
    conn.reset();
    connected_ = false;
  };
  while (!stop.stop_requested()) {
    try {
      if (!conn || !conn->healthy()) {
        drop();
        listening.clear();
        conn = connect_();
        backoff = std::chrono::milliseconds(100);
      }
      {
        std::set<std::string> wanted;
        {
          std::lock_guard lock(mutex_);
          if (channels_changed_ || listening.empty()) wanted = channels_;
          channels_changed_ = false;
        }
        bool added = false;
        for (const auto& ch : wanted) {
          if (listening.insert(ch).second) {
            conn->exec_script("LISTEN " + spool::detail::quote_identifier(ch));
            added = true;
          }
        }
        if (added && !connected_) {
          connected_ = true;
          if (lost_one) ++reconnects_;
        }
        // Anything sent before this LISTEN (or while we were away) is lost: look now.
        if (added) on_event_(nullptr);
      }
      // Short waits keep shutdown and new channels prompt without a self-pipe.
      pollfd pfd{PQsocket(conn->native()), POLLIN, 0};
      const int ready = ::poll(&pfd, 1, 200);
      if (ready < 0) continue;
      if (ready > 0 && PQconsumeInput(conn->native()) == 0) {
        spool::detail::log().warn("notifier: listening connection lost; reconnecting");
        drop();
        continue;
      }
      while (PGnotify* n = PQnotifies(conn->native())) {
        const event e{n->relname != nullptr ? n->relname : "", n->extra != nullptr ? n->extra : ""};
        PQfreemem(n);
        on_event_(&e);
      }
    } catch (const std::exception& e) {
      drop();
      spool::detail::log().debug("notifier: {}; retrying in {} ms", e.what(), backoff.count());
      const auto until = std::chrono::steady_clock::now() + backoff;
      while (!stop.stop_requested() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }
}

}  // namespace spool::pg::detail
