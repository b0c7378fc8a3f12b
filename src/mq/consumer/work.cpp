// The consumer's workers: poll a batch, run the handler on each message (or
// on the whole batch), then record the outcomes (message-queue.md §5.9).
#include "common/log.hpp"
#include "mq/consumer/impl.hpp"
#include "spool/error.hpp"

namespace spool::mq {

using spool::detail::log;

void consumer::impl::work(const std::stop_token& stop) {
  std::mt19937_64 rng(std::random_device{}());
  // Each worker and the keeper's extensions hold a connection at once: open
  // them now, not as the first messages arrive (a connect costs milliseconds).
  (void)q.warm(opts.concurrency + 1);
  while (!stop.stop_requested()) {
    std::vector<delivered_message> got;
    try {
      got = q.poll_wait(opts.batch, opts.idle_wait, {std::nullopt, stop});
    } catch (const error& e) {
      if (stop.stop_requested() || e.code() == errc::stopped) return;
      ++poll_errors;
      log().warn("consumer: poll on queue failed: {}", e.what());
      (void)spool::detail::sleep_for(std::chrono::milliseconds(500), stop);
      continue;
    }
    for (const auto& d : got) track(d.receipt, true);
    if (whole_batch) {
      handle_batch(got, rng);
      continue;
    }
    std::vector<const delivered_message*> succeeded;
    std::size_t next = 0;
    for (; next < got.size() && (next == 0 || !stop.stop_requested()); ++next) {
      if (handle(got[next], rng)) succeeded.push_back(&got[next]);
    }
    ack_all(succeeded);
    release_unstarted(got, next);
  }
}

// Runs the handler on one message; a failure is nacked here, a success is
// returned for the batch's ack.
bool consumer::impl::handle(const delivered_message& d, std::mt19937_64& rng) {
  ++delivered;
  std::string why;
  const bool ok = run_handler([&] { handler(d); }, why);
  if (!ok) nack(d, why, rng);
  return ok;
}

void consumer::impl::handle_batch(const std::vector<delivered_message>& got, std::mt19937_64& rng) {
  delivered += got.size();
  std::string why;
  if (run_handler([&] { whole_batch(std::span<const delivered_message>(got)); }, why)) {
    std::vector<const delivered_message*> all;
    for (const auto& d : got) all.push_back(&d);
    ack_all(all);
  } else {
    for (const auto& d : got) nack(d, why, rng);
  }
}

bool consumer::impl::run_handler(const std::function<void()>& call, std::string& why) {
  bool ok = true;
  const auto began = std::chrono::steady_clock::now();
  try {
    call();
  } catch (const std::exception& e) {
    ok = false;
    why = e.what();
  } catch (...) {
    ok = false;
    why = "unknown exception";
  }
  std::lock_guard lock(mutex);
  handler_latency.observe(std::chrono::steady_clock::now() - began);
  if (!ok) ++failed;
  return ok;
}

}  // namespace spool::mq
