// The outbox store's retention calls (outbox.md §6.5): prune, and archive-and-prune
// with the archiver run on its own thread under a deadline.
#include <fmt/format.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

#include "outbox/store.hpp"
#include "outbox/store_calls.hpp"
#include "outbox/text.hpp"
#include "spool/outbox/store.hpp"

namespace spool::outbox {

namespace {

using detail::invalid;
using detail::observed;
using std::chrono::microseconds;

// Runs the archiver on its own thread with its own copy of the batch and
// waits until it returns or the deadline passes (then asks it to stop and
// ignores its late result). Throws the outcome's error to roll back.
void run_archiver(const archiver& a, const std::vector<archived_message>& batch,
                  std::chrono::milliseconds budget) {
  struct shared {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    archive_outcome outcome;
    bool threw = false;
    std::vector<archived_message> batch;
    archiver fn;
    std::stop_source stop;
  };
  auto s = std::make_shared<shared>();
  s->batch = batch;
  s->fn = a;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  std::thread([s, deadline] {
    archive_outcome o;
    bool threw = false;
    try {
      o = s->fn(s->batch, deadline, s->stop.get_token());
    } catch (...) {
      threw = true;
    }
    std::lock_guard lock(s->m);
    s->outcome = std::move(o);
    s->threw = threw;
    s->done = true;
    s->cv.notify_all();
  }).detach();
  std::unique_lock lock(s->m);
  if (!s->cv.wait_until(lock, deadline, [&] { return s->done; })) {
    s->stop.request_stop();
    throw error(errc::unavailable,
                fmt::format("the archiver overran its {} ms deadline; nothing was deleted", budget.count()),
                "archive_timeout");
  }
  if (s->threw) throw error(errc::unavailable, "the archiver threw; nothing was deleted", "archiver_threw");
  if (!s->outcome.ok) {
    throw error(errc::unavailable,
                fmt::format("the archiver failed: {}; nothing was deleted",
                            detail::sanitize_error_text(s->outcome.error, 256)),
                "archiver_failed");
  }
}

}  // namespace

std::vector<std::string> store::prune(message_state s, const cutoff& before, std::size_t limit,
                                      const archiver* a, const call_options& c) {
  if (a != nullptr && !*a) invalid("archiver_required", "archive_and_prune needs an archiver");
  if (!before.instant() && !before.age()) invalid("prune_cutoff_required", "prune needs a cutoff");
  if (before.instant() && (*before.instant() < min_time() || *before.instant() > max_time())) {
    invalid("timestamp_out_of_range", "the cutoff is outside 0001..9999");
  }
  if (before.age() && *before.age() < microseconds(0))
    invalid("value_outside_bounds", "the cutoff age is negative");
  if (limit < 1 || limit > options_.max_admin_batch) {
    invalid("invalid_admin_limit",
            fmt::format("limit = {} is outside 1..{}", limit, options_.max_admin_batch));
  }
  const std::function<void(const std::vector<archived_message>&)> archive_fn =
      [&](const std::vector<archived_message>& batch) { run_archiver(*a, batch, options_.archive_deadline); };
  const std::int64_t tx_timeout = options_.archive_deadline.count() + 5000;
  return observed(
      this, a != nullptr ? operation::archive : operation::prune, &store::emit,
      [&] { return backend_->prune(s, before, limit, a != nullptr ? &archive_fn : nullptr, tx_timeout, c); },
      [](event& e, const std::vector<std::string>& ids) { e.count = ids.size(); });
}

std::vector<std::string> store::prune_delivered(const cutoff& before, std::size_t limit,
                                                const call_options& c) {
  return prune(message_state::delivered, before, limit, nullptr, c);
}
std::vector<std::string> store::prune_dead(const cutoff& before, std::size_t limit, const call_options& c) {
  return prune(message_state::dead, before, limit, nullptr, c);
}
std::vector<std::string> store::archive_and_prune_delivered(const cutoff& before, std::size_t limit,
                                                            const archiver& a, const call_options& c) {
  return prune(message_state::delivered, before, limit, &a, c);
}
std::vector<std::string> store::archive_and_prune_dead(const cutoff& before, std::size_t limit,
                                                       const archiver& a, const call_options& c) {
  return prune(message_state::dead, before, limit, &a, c);
}

}  // namespace spool::outbox
