// spool::outbox::store: argument checks in the order of outbox.md §6,
// sanitising, observer events, the archiver thread; the SQL is behind the
// seam (store_postgres.cpp, store_sqlite.cpp).
#include "spool/outbox/store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_set>

#include "common/call_guard.hpp"
#include "common/log.hpp"
#include "common/uuid.hpp"
#include "engine/database_impl.hpp"
#include "outbox/store.hpp"
#include "outbox/text.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::outbox {

namespace {

constexpr int schema_version = 1;
using std::chrono::microseconds;

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

void check_failure(const failure& f) {
  const bool ok = !f.code.empty() && f.code.size() <= 64 &&
                  f.code.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.") == std::string::npos;
  if (!ok) invalid("value_outside_bounds", "failure code must be 1..64 bytes of [a-z0-9_.]");
}

}  // namespace

struct store::state {
  std::atomic<std::uint64_t> observer_failures{0};
  std::optional<database> db;  // for subscribe_changes
  std::string qualified;       // the NOTIFY payload naming this table
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
  auto n = detail::names_of(o.config, db.kind());
  if (db.kind() == engine::postgres) {
    detail::resolve_schema(n, db);
    state_->qualified = n.qualified;
    backend_ = detail::make_postgres_backend(db, std::move(n));
  } else {
    backend_ = detail::make_sqlite_backend(db, std::move(n));
  }
  backend_->check_schema(schema_version, {});
}

store::~store() = default;

namespace {

// SQLite: a thread that turns this process's commits on the database (the
// wake signal sqlite::tx raises) into calls of fn until destroyed.
class commit_watcher {
 public:
  commit_watcher(database db, std::function<void(bool)> fn)
      : db_(std::move(db)),
        fn_(std::move(fn)),
        seen_(db_.impl().wake().generation()),
        thread_([this] { watch(); }) {}
  ~commit_watcher() {
    stopped_ = true;
    db_.impl().wake().poke();
    thread_.join();
  }
  commit_watcher(const commit_watcher&) = delete;
  commit_watcher& operator=(const commit_watcher&) = delete;

 private:
  void watch() {
    auto& wake = db_.impl().wake();
    auto seen = seen_;  // read before the subscription returned: no commit after it is missed
    while (!stopped_) {
      wake.wait_until(seen, std::chrono::steady_clock::now() + std::chrono::seconds(1),
                      [&] { return stopped_.load(); });
      const auto now = wake.generation();
      if (now != seen && !stopped_) fn_(true);
      seen = now;
    }
  }
  database db_;
  std::function<void(bool)> fn_;
  std::atomic<bool> stopped_{false};
  std::uint64_t seen_;
  std::thread thread_;
};

}  // namespace

std::shared_ptr<void> store::subscribe_changes(std::function<void(bool)> fn) {
  if (!fn) invalid("invalid_config", "subscribe_changes needs a callback");
  auto& db = *state_->db;
  if (db.kind() == engine::postgres) {
    return db.impl().subscribe(options_.config.notify_channel,
                               [fn = std::move(fn), table = state_->qualified](const std::string* payload) {
                                 if (payload == nullptr) {
                                   fn(false);
                                 } else if (*payload == table) {
                                   fn(true);
                                 }
                               });
  }
  return std::make_shared<commit_watcher>(db, std::move(fn));
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

namespace {

// Runs fn, timing it and emitting one event for the outcome (failures with
// their errc and reason); the event is completed by `fill` on success.
template <class Fn, class Fill>
auto observed(const store* s, operation op, void (store::*emit)(event) const, Fn&& fn, Fill&& fill,
              std::string message_id = {}) {
  const auto start = std::chrono::steady_clock::now();
  event e;
  e.op = op;
  e.message_id = std::move(message_id);
  try {
    auto result = fn();
    e.duration = std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - start);
    fill(e, result);
    (s->*emit)(e);
    return result;
  } catch (const error& err) {
    e.ok = false;
    e.duration = std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - start);
    e.code = err.code();
    e.reason = err.reason();
    (s->*emit)(e);
    throw;
  }
}

}  // namespace

std::vector<claimed_message> store::claim(const std::string& owner, std::size_t limit,
                                          microseconds lease_duration, serialization mode,
                                          const call_options& c) {
  if (owner.empty()) invalid("claim_owner_required", "claim needs an owner");
  if (owner.size() > 255)
    invalid("value_outside_bounds", fmt::format("owner is {} bytes; the limit is 255", owner.size()));
  if (limit < 1 || limit > options_.max_claim_batch) {
    invalid("invalid_claim_limit",
            fmt::format("limit = {} is outside 1..{}", limit, options_.max_claim_batch));
  }
  if (lease_duration <= microseconds(0) || lease_duration > options_.max_lease_duration) {
    invalid("invalid_lease_duration",
            fmt::format("lease duration {} µs is outside (0, {} µs]", lease_duration.count(),
                        options_.max_lease_duration.count()));
  }
  if (mode != serialization::none && mode != serialization::by_ordering_key &&
      mode != serialization::by_topic) {
    invalid("invalid_serialization", "serialization must be none, by_ordering_key or by_topic");
  }
  return observed(
      this, operation::claim, &store::emit,
      [&] {
        try {
          return backend_->claim(owner, limit, lease_duration.count(), mode, c);
        } catch (...) {
          detail::rethrow_translated();
        }
      },
      [](event& e, const std::vector<claimed_message>& got) {
        e.count = got.size();
        if (got.size() == 1) {
          e.message_id = got[0].message.id;
          e.topic = got[0].message.topic;
          e.claim_count = got[0].message.claim_count;
          e.failure_count = got[0].message.failure_count;
        }
      });
}

std::vector<std::optional<time_point>> store::extend_leases(const std::vector<lease_ref>& refs,
                                                            microseconds duration, const call_options& c) {
  if (duration <= microseconds(0) || duration > options_.max_lease_duration) {
    invalid("invalid_lease_duration", fmt::format("lease duration {} µs is outside (0, {} µs]",
                                                  duration.count(), options_.max_lease_duration.count()));
  }
  if (refs.empty() || refs.size() > 1000) {
    invalid("value_outside_bounds", fmt::format("extend_leases takes 1..1000 refs, got {}", refs.size()));
  }
  for (const auto& r : refs) check_ref(r);
  return observed(
      this, operation::extend, &store::emit, [&] { return backend_->extend(refs, duration.count(), c); },
      [](event& e, const std::vector<std::optional<time_point>>& got) {
        e.count = static_cast<std::size_t>(
            std::count_if(got.begin(), got.end(), [](const auto& t) { return t.has_value(); }));
      },
      refs.size() == 1 ? refs[0].id : std::string());
}

time_point store::extend_lease(const lease_ref& ref, microseconds duration, const call_options& c) {
  const auto got = extend_leases({ref}, duration, c);
  if (!got.at(0)) {
    throw error(errc::lease_lost, fmt::format("the lease on {} expired or was replaced", ref.id),
                "lease_lost");
  }
  return *got[0];
}

namespace {

struct fenced_call {
  operation op;
  detail::transition t;
};

}  // namespace

#define SPOOL_OUTBOX_FENCED(OP, T, PGFN, SQFN)                                                          \
  observed(                                                                                             \
      this, OP, &store::emit,                                                                           \
      [&] {                                                                                             \
        std::optional<detail::transition_row> r;                                                        \
        try {                                                                                           \
          r = backend_->fenced(ref, T, PGFN, SQFN, c);                                                  \
        } catch (...) {                                                                                 \
          detail::rethrow_translated();                                                                 \
        }                                                                                               \
        if (!r) {                                                                                       \
          throw error(errc::lease_lost, fmt::format("the lease on {} expired or was replaced", ref.id), \
                      "lease_lost");                                                                    \
        }                                                                                               \
        return *r;                                                                                      \
      },                                                                                                \
      [](event& e, const detail::transition_row& row) {                                                 \
        e.count = 1;                                                                                    \
        e.topic = row.topic;                                                                            \
        e.claim_count = row.claim_count;                                                                \
        e.failure_count = row.failure_count;                                                            \
      },                                                                                                \
      ref.id)

void store::mark_delivered(const lease_ref& ref, const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::deliver, {}, {}, {}, {}};
  (void)SPOOL_OUTBOX_FENCED(operation::deliver, t, nullptr, nullptr);
}

void store::mark_delivered(const lease_ref& ref, const std::function<void(pg::tx&)>& fn,
                           const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::deliver, {}, {}, {}, {}};
  (void)SPOOL_OUTBOX_FENCED(operation::deliver, t, &fn, nullptr);
}

void store::mark_delivered(const lease_ref& ref, const std::function<void(sqlite::tx&)>& fn,
                           const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::deliver, {}, {}, {}, {}};
  (void)SPOOL_OUTBOX_FENCED(operation::deliver, t, nullptr, &fn);
}

std::vector<bool> store::mark_delivered_batch(const std::vector<lease_ref>& refs, const call_options& c) {
  return deliver_batch(refs, nullptr, nullptr, c);
}

std::vector<bool> store::mark_delivered_batch(const std::vector<lease_ref>& refs,
                                              const std::function<void(pg::tx&, const std::vector<bool>&)>& fn,
                                              const call_options& c) {
  return deliver_batch(refs, &fn, nullptr, c);
}

std::vector<bool> store::mark_delivered_batch(const std::vector<lease_ref>& refs,
                                              const std::function<void(sqlite::tx&, const std::vector<bool>&)>& fn,
                                              const call_options& c) {
  return deliver_batch(refs, nullptr, &fn, c);
}

std::vector<bool> store::deliver_batch(const std::vector<lease_ref>& refs,
                                       const std::function<void(pg::tx&, const std::vector<bool>&)>* pg_fn,
                                       const std::function<void(sqlite::tx&, const std::vector<bool>&)>* sqlite_fn,
                                       const call_options& c) {
  if (refs.empty() || refs.size() > 1000) {
    invalid("value_outside_bounds",
            fmt::format("mark_delivered_batch takes 1..1000 refs, got {}", refs.size()));
  }
  std::unordered_set<std::string_view> seen;
  for (const auto& r : refs) {
    check_ref(r);
    if (!seen.insert(r.id).second)
      invalid("duplicate_ref", fmt::format("message {} appears twice in the batch", r.id));
  }
  using rows_t = std::vector<std::optional<detail::transition_row>>;
  const rows_t rows = observed(
      this, operation::deliver, &store::emit,
      [&] {
        try {
          return backend_->deliver_many(refs, pg_fn, sqlite_fn, c);
        } catch (...) {
          detail::rethrow_translated();
        }
      },
      [](event& e, const rows_t& got) {
        e.count = static_cast<std::size_t>(
            std::count_if(got.begin(), got.end(), [](const auto& r) { return r.has_value(); }));
      },
      refs.size() == 1 ? refs[0].id : std::string());
  std::vector<bool> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r.has_value());
  return out;
}

std::optional<claimed_message> store::mark_delivered_and_claim_next(const lease_ref& ref,
                                                                    microseconds lease_duration,
                                                                    serialization mode,
                                                                    const call_options& c) {
  check_ref(ref);
  if (lease_duration <= microseconds(0) || lease_duration > options_.max_lease_duration) {
    invalid("invalid_lease_duration",
            fmt::format("lease duration {} µs is outside (0, {} µs]", lease_duration.count(),
                        options_.max_lease_duration.count()));
  }
  if (mode != serialization::none && mode != serialization::by_ordering_key &&
      mode != serialization::by_topic) {
    invalid("invalid_serialization", "serialization must be none, by_ordering_key or by_topic");
  }
  using outcome = detail::store_backend::deliver_next_outcome;
  const auto start = std::chrono::steady_clock::now();
  const outcome o = observed(
      this, operation::deliver, &store::emit,
      [&] {
        std::optional<outcome> r;
        try {
          r = backend_->deliver_and_claim_next(ref, lease_duration.count(), mode, c);
        } catch (...) {
          detail::rethrow_translated();
        }
        if (!r) {
          throw error(errc::lease_lost, fmt::format("the lease on {} expired or was replaced", ref.id),
                      "lease_lost");
        }
        return std::move(*r);
      },
      [](event& e, const outcome& r) {
        e.count = 1;
        e.topic = r.delivered.topic;
        e.claim_count = r.delivered.claim_count;
        e.failure_count = r.delivered.failure_count;
      },
      ref.id);
  if (o.next) {
    event e;
    e.op = operation::claim;
    e.count = 1;
    e.message_id = o.next->message.id;
    e.topic = o.next->message.topic;
    e.claim_count = o.next->message.claim_count;
    e.failure_count = o.next->message.failure_count;
    e.duration = std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - start);
    emit(std::move(e));
  }
  return o.next;
}

void store::retry(const lease_ref& ref, const retry_at& at, const failure& f, const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::retry, {}, {}, {}, {}};
  if (at.delay()) {
    if (*at.delay() < microseconds(0) || *at.delay() > options_.max_retry_delay) {
      invalid("invalid_retry_delay",
              fmt::format("retry delay {} µs is outside 0..max_retry_delay", at.delay()->count()));
    }
    t.delay_us = at.delay()->count();
  } else if (at.instant()) {
    if (*at.instant() < min_time() || *at.instant() > max_time()) {
      invalid("timestamp_out_of_range", "retry time is outside 0001..9999");
    }
    if (detail::micros(*at.instant()) - detail::host_now_us() > options_.max_retry_delay.count()) {
      invalid("invalid_retry_delay", "retry time is more than max_retry_delay ahead");
    }
    t.at_us = detail::micros(*at.instant());
  } else {
    invalid("invalid_retry_delay", "retry_at is empty");
  }
  check_failure(f);
  t.code = f.code;
  t.message = detail::sanitize_error_text(f.message, options_.max_error_bytes);
  (void)SPOOL_OUTBOX_FENCED(operation::retry, t, nullptr, nullptr);
}

void store::dead_letter(const lease_ref& ref, const failure& f, const call_options& c) {
  check_ref(ref);
  check_failure(f);
  detail::transition t{detail::transition::kind::dead,
                       {},
                       {},
                       f.code,
                       detail::sanitize_error_text(f.message, options_.max_error_bytes)};
  (void)SPOOL_OUTBOX_FENCED(operation::dead, t, nullptr, nullptr);
}

void store::release_lease(const lease_ref& ref, const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::release, {}, {}, {}, {}};
  (void)SPOOL_OUTBOX_FENCED(operation::release, t, nullptr, nullptr);
}

#undef SPOOL_OUTBOX_FENCED

backlog_info store::backlog(const call_options& c) { return backend_->backlog(c); }

std::string_view to_string(lease_fate f) noexcept {
  switch (f) {
    case lease_fate::held:
      return "held";
    case lease_fate::pending:
      return "pending";
    case lease_fate::delivered:
      return "delivered";
    case lease_fate::dead:
      return "dead";
    case lease_fate::replaced:
      return "replaced";
    case lease_fate::missing:
      return "missing";
  }
  return "missing";
}

lease_fate store::check_lease(const lease_ref& ref, const call_options& c) {
  check_ref(ref);
  std::optional<std::pair<message_state, bool>> s;
  try {
    s = backend_->lease_state(ref, c);
  } catch (...) {
    detail::rethrow_translated();
  }
  if (!s) return lease_fate::missing;
  switch (s->first) {
    case message_state::leased:
      return s->second ? lease_fate::held : lease_fate::replaced;
    case message_state::pending:
      return lease_fate::pending;
    case message_state::delivered:
      return lease_fate::delivered;
    case message_state::dead:
      return lease_fate::dead;
  }
  return lease_fate::missing;
}

namespace {

std::string make_cursor(const message_summary& m) {
  return "c" + detail::base64url_encode(std::to_string(detail::micros(m.created_at)) + ":" + m.id);
}

// A cursor "c<base64url(µs:id)>", or an RFC 3339 time T meaning (T, "").
std::pair<std::int64_t, std::string> parse_cursor(const std::string& text) {
  std::string raw;
  if (text.size() > 1 && text[0] == 'c' && detail::base64url_decode(std::string_view(text).substr(1), raw)) {
    const auto colon = raw.find(':');
    if (colon != std::string::npos) {
      try {
        std::size_t used = 0;
        const auto us = std::stoll(raw.substr(0, colon), &used);
        if (used == colon) {
          const std::string id = raw.substr(colon + 1);
          if (id.size() > 255) invalid("value_outside_bounds", "cursor id is over 255 bytes");
          return {us, id};
        }
      } catch (const std::logic_error&) {
      }
    }
  }
  return {detail::micros(parse_time(text)), ""};
}

}  // namespace

inspect_page store::inspect(const inspect_query& q, const call_options& c) {
  if (q.limit < 1 || q.limit > options_.max_admin_batch) {
    invalid("invalid_admin_limit",
            fmt::format("limit = {} is outside 1..{}", q.limit, options_.max_admin_batch));
  }
  if (q.topic && q.topic->size() > 255) invalid("value_outside_bounds", "topic is over 255 bytes");
  std::optional<std::pair<std::int64_t, std::string>> before;
  if (q.before) before = parse_cursor(*q.before);
  inspect_page page;
  page.messages = backend_->inspect(q.state, q.topic, before, q.limit, c);
  if (page.messages.size() == q.limit) page.next = make_cursor(page.messages.back());
  return page;
}

replay_result store::replay(const replay_request& r, const call_options& c) {
  if (r.ids.empty()) invalid("replay_ids_required", "replay needs at least one id");
  if (r.ids.size() > options_.max_admin_batch) {
    invalid("invalid_admin_limit",
            fmt::format("{} ids; max_admin_batch is {}", r.ids.size(), options_.max_admin_batch));
  }
  if (r.requested_by.empty()) invalid("replay_requester_required", "replay needs requested_by");
  if (r.requested_by.size() > 255) invalid("value_outside_bounds", "requested_by is over 255 bytes");
  if (r.reason.empty()) invalid("replay_reason_required", "replay needs a reason");
  if (r.reason.size() > 4096) invalid("value_outside_bounds", "reason is over 4096 bytes");
  std::set<std::string_view> seen;
  for (const auto& id : r.ids) {
    if (id.empty()) invalid("replay_ids_required", "replay ids must not be empty");
    if (id.size() > 255) invalid("value_outside_bounds", "a replay id is over 255 bytes");
    if (!seen.insert(id).second) invalid("replay_duplicate_id", fmt::format("id {} is requested twice", id));
  }
  if (r.available_at && (*r.available_at < min_time() || *r.available_at > max_time())) {
    invalid("timestamp_out_of_range", "available_at is outside 0001..9999");
  }
  if (options_.replay_authorizer) {
    bool approved = false;
    try {
      const replay_request copy = r;
      approved = options_.replay_authorizer(copy);
    } catch (...) {
      approved = false;
    }
    if (!approved) {
      emit({operation::replay,
            false,
            0,
            {},
            {},
            0,
            0,
            microseconds(0),
            errc::unauthorized,
            "replay_unauthorized"});
      throw error(errc::unauthorized, "the replay authorizer denied the request", "replay_unauthorized");
    }
  }
  const std::string replay_id = spool::detail::uuid_v4();
  return observed(
      this, operation::replay, &store::emit,
      [&] {
        detail::store_backend::replay_outcome o;
        try {
          o = backend_->replay(r, replay_id, options_.replay_lock_timeout.count(), c);
        } catch (...) {
          detail::rethrow_translated();
        }
        if (o.conflict) throw replay_conflict(std::move(o.statuses));
        return replay_result{replay_id, std::move(o.previous)};
      },
      [](event& e, const replay_result& res) { e.count = res.items.size(); });
}

namespace {

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

void store::ping(const call_options& c) { backend_->ping(c); }

}  // namespace spool::outbox
