// The op-queue driver's logic above the store seam (op-queue.md §4–§6):
// validation, dedup outcomes, fencing, decoding, the closed state. Everything
// SQL is in store_postgres.cpp and store_sqlite.cpp.
#include "spool/ops/queue.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>

#include "common/call_guard.hpp"
#include "common/identifier.hpp"
#include "common/log.hpp"
#include "common/utf8.hpp"
#include "engine/database_impl.hpp"
#include "engine/postgres/tx_impl.hpp"
#include "engine/sqlite/tx_impl.hpp"
#include "migrate/migration_files.hpp"
#include "ops/cursor.hpp"
#include "ops/fencing.hpp"
#include "ops/row_codec.hpp"
#include "ops/store.hpp"
#include "ops/validate.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::ops {

namespace {

using sqlite_pool = spool::detail::pool<sqlite::detail::connection>;

constexpr int max_dedup_rounds = 20;

void validate(const queue_options& o) {
  if (!o.schema.empty()) spool::detail::validate_identifier("schema", o.schema);
  // idx_<table>_running_heartbeat must fit PostgreSQL's 63-byte names.
  spool::detail::validate_identifier("table", o.table, 41);
  spool::detail::validate_identifier("notify_channel", o.notify_channel);
  if (!o.owner.empty()) detail::check_name("owner", o.owner);
  if (o.max_payload_bytes == 0) throw error(errc::invalid_argument, "max_payload_bytes must be positive");
  if (o.call_timeout.count() <= 0) throw error(errc::invalid_argument, "call_timeout must be positive");
  if (o.default_retry_delay.count() < 0) {
    throw error(errc::invalid_argument, fmt::format("default_retry_delay must not be negative, got {}s",
                                                    o.default_retry_delay.count()));
  }
}

migrate_options migration_options(const queue_options& o) {
  migrate_options m;
  m.components = {"ops"};
  m.schema = o.schema;
  m.ops_table = o.table == "ops_queue" ? std::string() : o.table;
  return m;
}

}  // namespace

struct queue::impl {
  queue_options opts;
  engine kind = engine::sqlite;
  std::optional<database> db;  // absent for an adopted SQLite handle
  bool owns_db = false;        // opened by spool::ops::open
  std::unique_ptr<sqlite_pool> adopted_pool;
  std::unique_ptr<spool::detail::wake_signal> adopted_wake;
  std::string owner;
  detail::store_config config;
  std::unique_ptr<detail::store> st;
  std::string shown;  // the database as messages show it

  std::mutex mutex;
  std::condition_variable idle;
  bool closed = false;
  int running = 0;

  // The caller's limits, with call_timeout as the deadline when none is given.
  [[nodiscard]] call_options limits(const call_options& call) const {
    call_options out = call;
    if (!out.deadline) out.deadline = std::chrono::steady_clock::now() + opts.call_timeout;
    return out;
  }

  [[nodiscard]] bool is_closed() {
    std::lock_guard lock(mutex);
    return closed;
  }

  [[nodiscard]] error stopped_error() const {
    return error(errc::stopped, fmt::format("the op queue on {} is closed", shown));
  }

  // Runs one database operation: refuses after close, and reports a failure
  // caused by a racing close as `stopped`.
  template <class F>
  auto run(F&& f) {
    {
      std::lock_guard lock(mutex);
      if (closed) throw stopped_error();
      ++running;
    }
    struct leave_guard {
      impl* self;
      ~leave_guard() {
        std::lock_guard lock(self->mutex);
        if (--self->running == 0) self->idle.notify_all();
      }
    } guard{this};
    try {
      return f();
    } catch (const error& e) {
      if (e.code() != errc::stopped && is_closed()) throw stopped_error();
      throw;
    }
  }

  void init() {
    validate(opts);
    owner = opts.owner.empty() ? default_owner() : opts.owner;
    config.table = opts.table;
    config.notify = opts.notify;
    config.channel = opts.notify_channel;
    if (kind == engine::postgres) {
      if (opts.migrate) spool::migrate(*db, migration_options(opts));
      config.schema = detail::resolve_pg_schema(db->impl(), opts.schema, limits({}));
      st = detail::make_postgres_store(db->impl(), config);
    } else {
      if (adopted_pool) {
        if (opts.migrate) {
          auto conn = adopted_pool->acquire();
          spool::detail::migrate_sqlite_connection(*conn, migration_options(opts));
        }
        st = detail::make_sqlite_store(*adopted_pool, *adopted_wake, "", {}, config);
      } else {
        if (opts.migrate) spool::migrate(*db, migration_options(opts));
        st = detail::make_sqlite_store(db->impl().sqlite_pool(), db->impl().wake(), db->impl().target(),
                                       db->impl().options(), config);
      }
    }
    st->check_schema(limits({}));
  }

  // Dedup outcomes (§6) around an inserter and a holder lookup that run on
  // the same connection or transaction.
  template <class Insert, class Holders>
  std::vector<enqueue_result> enqueue(const std::vector<new_op>& ops, const enqueue_options& options,
                                      bool single, Insert&& insert, Holders&& holders) {
    auto items = detail::prepare_batch(ops, opts.max_payload_bytes, !single);
    std::vector<enqueue_result> out(items.size());
    if (items.empty()) return out;
    const on_duplicate mode = options.duplicates.value_or(opts.duplicates);
    std::vector<std::size_t> index(items.size());
    for (std::size_t i = 0; i < index.size(); ++i) index[i] = i;
    for (int round = 0;; ++round) {
      const std::vector<detail::insert_outcome> outcome = insert(items);
      std::vector<std::size_t> collided;
      for (std::size_t k = 0; k < items.size(); ++k) {
        switch (outcome[k]) {
          case detail::insert_outcome::inserted:
            out[index[k]] = {items[k].id, true, enqueue_status::created};
            break;
          case detail::insert_outcome::id_taken:
            // One op: the caller's call is wrong. In a batch: a retried or
            // resumed batch, whose earlier attempt stored this item.
            if (single) {
              throw error(errc::already_exists,
                          fmt::format("an op with id \"{}\" already exists", items[k].id), "already_exists");
            }
            out[index[k]] = {items[k].id, false, enqueue_status::already_exists};
            break;
          case detail::insert_outcome::key_held:
            collided.push_back(k);
            break;
        }
      }
      if (collided.empty()) return out;
      std::vector<std::string> keys;
      for (auto k : collided) keys.push_back(items[k].dedup_key.value_or(""));
      if (mode == on_duplicate::raise) {
        if (!single) {
          for (auto k : collided) out[index[k]] = {"", false, enqueue_status::deduplicated};
          return out;
        }
        const auto h = holders(keys);
        const std::string holder = h.at(0).value_or("");
        throw duplicate_op(fmt::format("pending op \"{}\" already holds dedup key \"{}\"", holder, keys[0]),
                           holder);
      }
      // return_existing: a holder claimed since the conflict freed its key, so
      // those items are inserted again; the call never returns neither.
      const auto h = holders(keys);
      std::vector<detail::insert_item> again;
      std::vector<std::size_t> again_index;
      for (std::size_t c = 0; c < collided.size(); ++c) {
        const auto k = collided[c];
        if (h[c]) {
          out[index[k]] = {*h[c], false, enqueue_status::deduplicated};
        } else {
          again.push_back(std::move(items[k]));
          again_index.push_back(index[k]);
        }
      }
      if (again.empty()) return out;
      if (round >= max_dedup_rounds) {
        throw error(errc::unavailable, "a dedup key kept changing hands; try again", "dedup_contention");
      }
      items = std::move(again);
      index = std::move(again_index);
    }
  }

  op_status outcome(detail::fence_request rq, const call_options& call) {
    const auto lim = limits(call);
    const auto r = run([&] { return st->outcome(rq, lim); });
    detail::check_fence(r, rq);
    return r.applied ? parse_status(r.new_status) : op_status::failed;
  }

  void close() {
    {
      std::lock_guard lock(mutex);
      if (closed) return;
      closed = true;
    }
    wake().poke();
    {
      std::unique_lock lock(mutex);
      idle.wait(lock, [&] { return running == 0; });
    }
    if (st) st->close();
    if (adopted_pool) {
      adopted_pool->clear_idle();  // finalizes Spool's statements; the handle stays open
    } else if (owns_db && db) {
      if (kind == engine::postgres) {
        db->impl().pg_pool().clear_idle();
      } else {
        db->impl().sqlite_pool().clear_idle();
      }
    }
  }

  spool::detail::wake_signal& wake() { return adopted_wake ? *adopted_wake : db->impl().wake(); }

  void require_engine(engine wanted) const {
    if (kind != wanted) {
      throw error(errc::invalid_argument,
                  fmt::format("this op queue is on {}; pass a {} transaction",
                              kind == engine::postgres ? "PostgreSQL" : "SQLite",
                              kind == engine::postgres ? "spool::pg::tx" : "spool::sqlite::tx"));
    }
  }
};

queue::queue(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

queue::queue(database db, queue_options options) : impl_(std::make_unique<impl>()) {
  impl_->opts = std::move(options);
  impl_->kind = db.kind();
  impl_->shown = db.display_name();
  impl_->db.emplace(std::move(db));
  impl_->init();
}

queue queue::adopt(::sqlite3* handle, queue_options options) {
  if (handle == nullptr) throw error(errc::invalid_argument, "adopt: null sqlite3 handle");
  auto p = std::make_unique<impl>();
  p->opts = std::move(options);
  p->kind = engine::sqlite;
  p->shown = "an adopted SQLite handle";
  // A pool of one: the handle is used by one call at a time, never closed.
  p->adopted_pool = std::make_unique<sqlite_pool>(
      1, [handle] { return std::make_unique<sqlite::detail::connection>(handle); },
      [](sqlite::detail::connection& c) { return !c.in_transaction(); });
  p->adopted_wake = std::make_unique<spool::detail::wake_signal>();
  p->init();
  return queue(std::move(p));
}

queue::queue(queue&&) noexcept = default;
queue& queue::operator=(queue&& other) noexcept {
  if (this != &other) {
    if (impl_) impl_->close();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
queue::~queue() {
  if (impl_) impl_->close();
}

// ---- enqueue ----

enqueue_result queue::enqueue(const new_op& o, const enqueue_options& options, const call_options& call) {
  const auto lim = impl_->limits(call);
  return impl_
      ->run([&] {
        return impl_->enqueue(
            {o}, options, true, [&](const auto& items) { return impl_->st->insert(items, lim); },
            [&](const auto& keys) { return impl_->st->holders(keys, lim); });
      })
      .at(0);
}

std::vector<enqueue_result> queue::enqueue_batch(const std::vector<new_op>& ops,
                                                 const enqueue_options& options, const call_options& call) {
  const auto lim = impl_->limits(call);
  return impl_->run([&] {
    return impl_->enqueue(
        ops, options, false, [&](const auto& items) { return impl_->st->insert(items, lim); },
        [&](const auto& keys) { return impl_->st->holders(keys, lim); });
  });
}

namespace {

// The transactional forms: the caller's transaction, checked as the outbox
// writer checks it, never committed here.
template <class Tx, class Insert, class Holders>
std::vector<enqueue_result> enqueue_in(queue::impl& q, Tx& tx, const std::vector<new_op>& ops,
                                       const enqueue_options& options, bool single, Insert&& insert,
                                       Holders&& holders) {
  return q.run([&] {
    tx.impl().require_transaction();
    auto& conn = tx.impl().conn();
    return q.enqueue(
        ops, options, single, [&](const auto& items) { return insert(conn, items); },
        [&](const auto& keys) { return holders(conn, keys); });
  });
}

}  // namespace

std::vector<enqueue_result> queue::enqueue_batch(pg::tx& tx, const std::vector<new_op>& ops,
                                                 const enqueue_options& options) {
  impl_->require_engine(engine::postgres);
  const auto& cfg = impl_->config;
  return enqueue_in(
      *impl_, tx, ops, options, false,
      [&](pg::detail::connection& c, const auto& items) {
        return detail::postgres_insert(c, cfg, items, {});
      },
      [&](pg::detail::connection& c, const auto& keys) {
        return detail::postgres_holders(c, cfg, keys, {});
      });
}

std::vector<enqueue_result> queue::enqueue_batch(sqlite::tx& tx, const std::vector<new_op>& ops,
                                                 const enqueue_options& options) {
  impl_->require_engine(engine::sqlite);
  const auto& cfg = impl_->config;
  return enqueue_in(
      *impl_, tx, ops, options, false,
      [&](sqlite::detail::connection& c, const auto& items) {
        return detail::sqlite_insert(c, cfg, items, {});
      },
      [&](sqlite::detail::connection& c, const auto& keys) {
        return detail::sqlite_holders(c, cfg, keys, {});
      });
}

enqueue_result queue::enqueue(pg::tx& tx, const new_op& o, const enqueue_options& options) {
  impl_->require_engine(engine::postgres);
  const auto& cfg = impl_->config;
  return enqueue_in(
             *impl_, tx, {o}, options, true,
             [&](pg::detail::connection& c, const auto& items) {
               return detail::postgres_insert(c, cfg, items, {});
             },
             [&](pg::detail::connection& c, const auto& keys) {
               return detail::postgres_holders(c, cfg, keys, {});
             })
      .at(0);
}

enqueue_result queue::enqueue(sqlite::tx& tx, const new_op& o, const enqueue_options& options) {
  impl_->require_engine(engine::sqlite);
  const auto& cfg = impl_->config;
  return enqueue_in(
             *impl_, tx, {o}, options, true,
             [&](sqlite::detail::connection& c, const auto& items) {
               return detail::sqlite_insert(c, cfg, items, {});
             },
             [&](sqlite::detail::connection& c, const auto& keys) {
               return detail::sqlite_holders(c, cfg, keys, {});
             })
      .at(0);
}

// ---- claim ----

namespace {
// Checks a claim's types and owner; the owner to record (empty: the driver's).
std::string claimant(const std::vector<std::string>& types, std::string_view owner,
                     const std::string& fallback) {
  for (const auto& t : types) detail::check_name("type", t);
  if (owner.empty()) return fallback;
  std::string who(owner);
  detail::check_name("owner", who);
  return who;
}
}  // namespace

std::optional<op> queue::dequeue(const std::vector<std::string>& types, std::string_view owner,
                                 const call_options& call) {
  const std::string who = claimant(types, owner, impl_->owner);
  const std::string token = detail::random_hex(16);
  const auto lim = impl_->limits(call);
  auto r = impl_->run([&] { return impl_->st->claim(types, who, token, lim); });
  if (!r) return std::nullopt;
  return detail::decode_row(*r, true);
}

std::vector<op> queue::dequeue_batch(std::size_t max, const std::vector<std::string>& types,
                                     std::string_view owner, const call_options& call) {
  if (max == 0 || max > 1000) {
    throw error(errc::invalid_argument, fmt::format("dequeue_batch takes 1..1000 ops, got {}", max),
                "value_outside_bounds");
  }
  const std::string who = claimant(types, owner, impl_->owner);
  std::vector<std::string> tokens;
  tokens.reserve(max);
  for (std::size_t i = 0; i < max; ++i) tokens.push_back(detail::random_hex(16));
  const auto lim = impl_->limits(call);
  const auto rows = impl_->run([&] { return impl_->st->claim_many(types, who, tokens, lim); });
  std::vector<op> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(detail::decode_row(r, true));
  return out;
}

bool queue::has_ready(const std::vector<std::string>& types, const call_options& call) {
  for (const auto& t : types) detail::check_name("type", t);
  const auto lim = impl_->limits(call);
  return impl_->run([&] { return impl_->st->has_ready(types, lim); });
}

// ---- outcomes ----

namespace {
detail::fence_request request(detail::fence_request::kind what, std::string_view id, std::string_view token,
                              std::string_view message = {}, bool retry = false) {
  detail::fence_request rq;
  rq.what = what;
  rq.id = std::string(id);
  if (!token.empty()) rq.token = std::string(token);
  rq.message = spool::detail::utf8_repair(message, true);  // U+FFFD for ill-formed bytes, no NUL
  rq.retry = retry;
  return rq;
}
}  // namespace

void queue::ack(std::string_view id, std::string_view token, const call_options& call) {
  impl_->outcome(request(detail::fence_request::kind::ack, id, token), call);
}

std::vector<lease> queue::ack_batch(const std::vector<lease>& leases, const call_options& call) {
  if (leases.empty()) return {};
  if (leases.size() > 1000) {
    throw error(errc::invalid_argument,
                fmt::format("ack_batch takes at most 1000 leases, got {}", leases.size()),
                "value_outside_bounds");
  }
  std::set<std::string_view> seen;
  std::vector<detail::fence_request> acks;
  acks.reserve(leases.size());
  for (const auto& l : leases) {
    if (l.token.empty()) {
      throw error(errc::invalid_argument, fmt::format("ack_batch: the lease of op \"{}\" has no token", l.id),
                  "value_outside_bounds");
    }
    if (!seen.insert(l.id).second) {
      throw error(errc::invalid_argument, fmt::format("ack_batch: op \"{}\" appears twice", l.id),
                  "duplicate_ref");
    }
    acks.push_back(request(detail::fence_request::kind::ack, l.id, l.token));
  }
  const auto lim = impl_->limits(call);
  const auto results = impl_->run([&] { return impl_->st->ack_many(acks, lim); });
  std::vector<lease> not_acked;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    try {
      detail::check_fence(results.at(i), acks[i]);
    } catch (const error&) {
      not_acked.push_back(leases[i]);
    }
  }
  return not_acked;
}

op_status queue::fail(std::string_view id, std::string_view token, std::string_view message, bool retry,
                      const call_options& call) {
  auto rq = request(detail::fence_request::kind::fail, id, token, message, retry);
  if (retry)
    rq.retry_delay = std::chrono::duration_cast<std::chrono::microseconds>(impl_->opts.default_retry_delay);
  return impl_->outcome(std::move(rq), call);
}

op_status queue::fail(std::string_view id, std::string_view token, std::string_view message,
                      time_point next_run, const call_options& call) {
  auto rq = request(detail::fence_request::kind::fail, id, token, message, true);
  rq.retry_at = next_run;
  return impl_->outcome(std::move(rq), call);
}

op_status queue::fail(std::string_view id, std::string_view token, std::string_view message,
                      std::chrono::microseconds delay, const call_options& call) {
  auto rq = request(detail::fence_request::kind::fail, id, token, message, true);
  rq.retry_delay = delay.count() < 0 ? std::chrono::microseconds{0} : delay;
  return impl_->outcome(std::move(rq), call);
}

void queue::release(std::string_view id, std::string_view token, std::string_view message,
                    const call_options& call) {
  impl_->outcome(request(detail::fence_request::kind::release, id, token, message), call);
}

void queue::heartbeat(std::string_view id, std::string_view token, const call_options& call) {
  impl_->outcome(request(detail::fence_request::kind::heartbeat, id, token), call);
}

std::vector<lease> queue::heartbeat_batch(const std::vector<lease>& leases, const call_options& call) {
  if (leases.empty()) return {};
  const auto lim = impl_->limits(call);
  const auto refreshed = impl_->run([&] { return impl_->st->heartbeat_batch(leases, lim); });
  std::vector<lease> lost;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    if (!refreshed[i]) lost.push_back(leases[i]);
  }
  return lost;
}

// ---- operator calls ----

op queue::cancel(std::string_view id, const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto r = impl_->run([&] { return impl_->st->cancel(std::string(id), lim); });
  if (!r.found) throw error(errc::not_found, fmt::format("cancel: no op with id \"{}\"", id));
  if (!r.after) {
    throw error(errc::invalid_state,
                fmt::format("cancel: op \"{}\" is {}; only pending ops can be cancelled", id, r.before));
  }
  return detail::decode_row(*r.after, false);
}

op queue::retry(std::string_view id, bool reset_attempts, const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto r = impl_->run([&] { return impl_->st->retry(std::string(id), reset_attempts, lim); });
  if (!r.found) throw error(errc::not_found, fmt::format("retry: no op with id \"{}\"", id));
  if (!r.after) {
    throw error(errc::invalid_state,
                fmt::format("retry: op \"{}\" is {}; only failed ops can be retried", id, r.before));
  }
  return detail::decode_row(*r.after, false);
}

op queue::get(std::string_view id, const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto r = impl_->run([&] { return impl_->st->get(std::string(id), lim); });
  if (!r) throw error(errc::not_found, fmt::format("no op with id \"{}\"", id));
  return detail::decode_row(*r, false);
}

namespace {
std::int64_t checked_limit(std::int64_t limit) {
  if (limit < 0 || limit > 500) {
    throw error(errc::invalid_argument, fmt::format("limit must be 0 … 500 (0 means 100), got {}", limit));
  }
  return limit == 0 ? 100 : limit;
}
}  // namespace

list_page queue::list(std::string_view status, std::int64_t limit, std::int64_t offset,
                      const call_options& call) {
  const auto n = checked_limit(limit);
  if (offset < 0)
    throw error(errc::invalid_argument, fmt::format("offset must not be negative, got {}", offset));
  const auto lim = impl_->limits(call);
  auto [rows, total] = impl_->run([&] { return impl_->st->list(std::string(status), n, offset, lim); });
  list_page out;
  out.total = total;
  for (const auto& r : rows) out.ops.push_back(detail::decode_row(r, false));
  return out;
}

keyset_page queue::list_after(std::string_view status, std::int64_t limit, std::string_view cursor,
                              const call_options& call) {
  const auto n = checked_limit(limit);
  const auto after = detail::decode_cursor(cursor);
  const auto lim = impl_->limits(call);
  const auto rows = impl_->run([&] { return impl_->st->list_after(std::string(status), n, after, lim); });
  keyset_page out;
  for (const auto& r : rows) out.ops.push_back(detail::decode_row(r, false));
  if (static_cast<std::int64_t>(rows.size()) == n) {
    out.next_cursor = detail::encode_cursor({rows.back().at(8).value_or(""), rows.back().at(0).value_or("")});
  }
  return out;
}

queue_stats queue::stats(const call_options& call) {
  const auto lim = impl_->limits(call);
  return impl_->run([&] { return impl_->st->stats(lim); });
}

std::int64_t queue::recover_orphans(std::chrono::seconds older_than, const call_options& call) {
  if (older_than.count() < 0) {
    throw error(errc::invalid_argument,
                fmt::format("older_than must not be negative, got {}s", older_than.count()));
  }
  const auto lim = impl_->limits(call);
  const auto n = impl_->run([&] { return impl_->st->recover_orphans(older_than, lim); });
  if (n > 0)
    spool::detail::log().info("recover_orphans requeued {} running op(s) of {}", n, impl_->config.table);
  return n;
}

std::vector<rescued_op> queue::rescue_expired(std::chrono::milliseconds lease_timeout,
                                              const call_options& call) {
  if (lease_timeout.count() <= 0) {
    throw error(errc::invalid_argument,
                fmt::format("lease_timeout must be positive, got {}ms", lease_timeout.count()));
  }
  const auto lim = impl_->limits(call);
  return impl_->run([&] { return impl_->st->rescue(lease_timeout, lim); });
}

std::vector<rescued_op> queue::recover_legacy_orphans(std::chrono::milliseconds older_than,
                                                      const call_options& call) {
  if (older_than.count() < 0) {
    throw error(errc::invalid_argument,
                fmt::format("older_than must not be negative, got {}ms", older_than.count()));
  }
  const auto lim = impl_->limits(call);
  return impl_->run([&] { return impl_->st->recover_legacy(older_than, lim); });
}

std::int64_t queue::repair_times(const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto n = impl_->run([&] { return impl_->st->repair_times(lim); });
  if (n > 0) spool::detail::log().warn("repair_times rewrote {} timestamp(s) of {}", n, impl_->config.table);
  return n;
}

// ---- wake-ups ----

std::uint64_t queue::change_marker() {
  return impl_->run([&] { return impl_->st->change_marker(impl_->limits({})); });
}

std::shared_ptr<void> queue::subscribe_ready(std::vector<std::string> types, std::function<void(bool)> fn) {
  if (impl_->is_closed()) throw impl_->stopped_error();
  std::sort(types.begin(), types.end());
  return impl_->st->subscribe([types = std::move(types), fn = std::move(fn)](const std::string* type) {
    if (type == nullptr) {
      fn(false);
    } else if (std::binary_search(types.begin(), types.end(), *type)) {
      fn(true);
    }
  });
}

queue::wake queue::wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout,
                                   std::stop_token stop) {
  if (impl_->is_closed()) throw impl_->stopped_error();
  impl_->st->wait_for_change(seen, timeout, stop, [this] { return impl_->is_closed(); });
  if (impl_->is_closed()) return wake::closed;
  if (stop.stop_requested()) return wake::stopped;
  return change_marker() != seen ? wake::changed : wake::timed_out;
}

// ---- lifecycle ----

void queue::close() {
  if (impl_) impl_->close();
}
bool queue::closed() const { return !impl_ || impl_->is_closed(); }
const std::string& queue::owner() const noexcept { return impl_->owner; }
engine queue::kind() const noexcept { return impl_->kind; }
const std::string& queue::schema() const noexcept { return impl_->config.schema; }
const std::string& queue::table() const noexcept { return impl_->config.table; }
const queue_options& queue::options() const noexcept { return impl_->opts; }

queue open(std::string_view uri, queue_options options, database_options db_options) {
  queue q(database::open(uri, db_options), std::move(options));
  q.impl_->owns_db = true;
  return q;
}

std::vector<applied_migration> migrate(database& db, const queue_options& options) {
  validate(options);
  return spool::migrate(db, migration_options(options));
}

std::string default_owner() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
    std::snprintf(host, sizeof host, "localhost");
  std::string out = fmt::format("{}:{}:{}", host, ::getpid(), detail::random_hex(4));
  if (out.size() > 255) out = out.substr(out.size() - 255);
  return out;
}

}  // namespace spool::ops
