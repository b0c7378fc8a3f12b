// The outbox relay's public lifecycle (outbox.md §7): run, start, stop and
// run_once. Its services are in src/outbox/relay/, one per file.
#include "spool/outbox/relay.hpp"

#include <thread>

#include "outbox/relay/impl.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using namespace std::chrono_literals;

std::string_view to_string(breaker_state s) noexcept {
  switch (s) {
    case breaker_state::closed:
      return "closed";
    case breaker_state::open:
      return "open";
    case breaker_state::half_open:
      return "half_open";
  }
  return "closed";
}

relay::relay(store& s, std::shared_ptr<sink> sink, relay_options options)
    : impl_(std::make_unique<impl>(s, std::move(sink), std::move(options))) {}

relay::~relay() {
  try {
    stop();
  } catch (...) {
  }
}

void relay::run(std::stop_token stop) {
  if (impl_->running.exchange(true))
    throw error(errc::invalid_state, "relay: already running", "already_running");
  {
    std::lock_guard lock(impl_->stop_mu);
    impl_->stop_src = std::stop_source();
  }
  impl_->run_until(stop);
}

void relay::start() {
  if (impl_->running.exchange(true))
    throw error(errc::invalid_state, "relay: already running", "already_running");
  if (impl_->background.joinable()) impl_->background.join();
  {
    std::lock_guard lock(impl_->stop_mu);
    impl_->stop_src = std::stop_source();
  }
  impl_->background = std::thread([this] { impl_->run_until({}); });
}

void relay::stop() {
  {
    std::lock_guard lock(impl_->stop_mu);
    impl_->stop_src.request_stop();
  }
  impl_->cv.notify_all();
  if (impl_->background.joinable() && impl_->background.get_id() != std::this_thread::get_id()) {
    impl_->background.join();
    return;
  }
  // run() on another thread: wait for its shutdown to end.
  while (impl_->running) std::this_thread::sleep_for(5ms);
}

std::size_t relay::run_once() {
  if (impl_->running.exchange(true))
    throw error(errc::invalid_state, "relay: already running", "already_running");
  impl_->begin_session();
  std::size_t got = 0;
  try {
    got = impl_->claim_round().second;
  } catch (const std::exception& e) {
    impl_->store_error("claim", e);
  }
  impl_->end_session(false);
  impl_->running = false;
  return got;
}

relay_metrics relay::metrics() const { return impl_->snapshot(); }

relay_health relay::health() const {
  std::lock_guard lock(impl_->mu);
  auto h = impl_->h;
  h.breaker = impl_->m.breaker;
  return h;
}

const std::string& relay::owner() const noexcept { return impl_->owner; }
const relay_options& relay::options() const noexcept { return impl_->o; }

}  // namespace spool::outbox
