// spool::outbox::store: argument checks in the order of outbox.md §6,
// sanitising, observer events, the archiver thread; the SQL is behind the
// seam (store_postgres.cpp, store_sqlite.cpp).
// This file: construction, change subscriptions and event emission; the calls are in
// store_leases.cpp, store_transitions.cpp, store_admin.cpp and store_prune.cpp.
#include "spool/outbox/store.hpp"

#include <fmt/format.h>

#include <atomic>
#include <optional>
#include <thread>

#include "engine/database_impl.hpp"
#include "outbox/store.hpp"
#include "outbox/store_calls.hpp"

namespace spool::outbox {

namespace detail {

[[noreturn]] void invalid(const char* reason, const std::string& message) {
  throw error(errc::invalid_argument, message, reason);
}

void check_ref(const lease_ref& ref) {
  if (ref.id.empty() || ref.id.size() > 255) {
    invalid("value_outside_bounds", fmt::format("lease id is {} bytes; it must be 1..255", ref.id.size()));
  }
  if (ref.token.size() > 36) {
    invalid("value_outside_bounds",
            fmt::format("lease token is {} bytes; the limit is 36", ref.token.size()));
  }
}

}  // namespace detail

namespace {

constexpr int schema_version = 1;
using std::chrono::microseconds;
using detail::invalid;

}  // namespace

struct store::state {
  std::atomic<std::uint64_t> observer_failures{0};
  std::optional<database> db;  // for subscribe_changes
};

store::store(database& db, store_options options)
    : options_(std::move(options)), state_(std::make_unique<state>()) {
  const auto& o = options_;
  if (o.max_claim_batch < 1 || o.max_claim_batch > 1000) {
    invalid("invalid_claim_limit", fmt::format("max_claim_batch = {} is outside 1..1000", o.max_claim_batch));
  }
  if (o.max_admin_batch < 1 || o.max_admin_batch > 1000) {
    invalid("invalid_admin_limit", fmt::format("max_admin_batch = {} is outside 1..1000", o.max_admin_batch));
  }
  if (o.max_lease_duration < std::chrono::milliseconds(1) || o.max_lease_duration > std::chrono::hours(24)) {
    invalid("invalid_lease_duration", "max_lease_duration must be 1 ms..24 h");
  }
  if (o.max_retry_delay < std::chrono::seconds(1) || o.max_retry_delay > std::chrono::hours(24 * 30)) {
    invalid("invalid_retry_delay", "max_retry_delay must be 1 s..30 days");
  }
  if (o.max_error_bytes < 64 || o.max_error_bytes > 4096) {
    invalid("value_outside_bounds",
            fmt::format("max_error_bytes = {} is outside 64..4096", o.max_error_bytes));
  }
  if (o.replay_lock_timeout < std::chrono::milliseconds(100) ||
      o.replay_lock_timeout > std::chrono::seconds(60)) {
    invalid("invalid_config", fmt::format("replay_lock_timeout = {} ms is outside 100 ms..60 s",
                                          o.replay_lock_timeout.count()));
  }
  if (o.archive_deadline < std::chrono::seconds(1) || o.archive_deadline > std::chrono::minutes(10)) {
    invalid("invalid_config",
            fmt::format("archive_deadline = {} ms is outside 1 s..10 min", o.archive_deadline.count()));
  }
  state_->db = db;
  backend_ = detail::make_backend(db, detail::names_of(o.config, db.kind()));
  backend_->check_schema(schema_version, {});
}

store::~store() = default;

std::shared_ptr<void> store::subscribe_changes(std::function<void(bool)> fn) {
  if (!fn) invalid("invalid_config", "subscribe_changes needs a callback");
  return backend_->subscribe_changes(options_.config.notify_channel, std::move(fn));
}

std::size_t store::warm(std::size_t connections) noexcept {
  return state_->db ? state_->db->impl().prefill(connections) : 0;
}

std::uint64_t store::observer_failures() const noexcept { return state_->observer_failures.load(); }

void store::emit(event e) const {
  if (!options_.observer) return;
  if (e.duration < microseconds(0)) e.duration = microseconds(0);
  try {
    options_.observer(e);
  } catch (...) {
    state_->observer_failures.fetch_add(1);
  }
}

backlog_info store::backlog(const call_options& c) { return backend_->backlog(c); }

void store::ping(const call_options& c) { backend_->ping(c); }

}  // namespace spool::outbox
