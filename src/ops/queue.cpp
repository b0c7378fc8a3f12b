// The op-queue driver's logic above the store seam (op-queue.md §4–§6):
// validation, dedup outcomes, fencing, decoding, the closed state. Everything
// SQL is in store_postgres.cpp and store_sqlite.cpp.
// This file: construction, close and the lifecycle calls; the calls on ops are in
// queue_enqueue.cpp, queue_claim.cpp, queue_outcomes.cpp, queue_operator.cpp and queue_wake.cpp.
#include "spool/ops/queue.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <mutex>

#include "common/identifier.hpp"
#include "engine/database_impl.hpp"
#include "migrate/migration_files.hpp"
#include "ops/queue_impl.hpp"
#include "ops/store.hpp"
#include "ops/validate.hpp"

namespace spool::ops {

namespace {

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

error queue::impl::stopped_error() const {
  return error(errc::stopped, fmt::format("the op queue on {} is closed", shown));
}

void queue::impl::init() {
  validate(opts);
  claims.emplace(opts.claim_concurrency);
  owner = opts.owner.empty() ? default_owner() : opts.owner;
  config.table = opts.table;
  config.notify = opts.notify;
  config.channel = opts.notify_channel;
  if (adopted_pool) {  // always SQLite: queue::adopt takes a sqlite3 handle
    if (opts.migrate) {
      auto conn = adopted_pool->acquire();
      spool::detail::migrate_sqlite_connection(*conn, migration_options(opts));
    }
    st = detail::make_sqlite_store(*adopted_pool, *adopted_wake, "", {}, config);
  } else {
    if (opts.migrate) spool::migrate(*db, migration_options(opts));
    st = detail::make_store(db->impl(), opts.schema, config, limits({}));
  }
  st->check_schema(limits({}));
}

void queue::impl::close() {
  if (!gate.close()) return;
  wake().poke();  // waiters re-check is_closed()
  gate.wait_idle();
  if (st) st->close();
  if (adopted_pool) {
    adopted_pool->clear_idle();  // finalizes Spool's statements; the handle stays open
  } else if (owns_db && db) {
    db->impl().clear_idle();
  }
}

spool::detail::wake_signal& queue::impl::wake() { return adopted_wake ? *adopted_wake : db->impl().wake(); }

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
  p->adopted_pool = std::make_unique<impl::sqlite_pool>(
      1, [handle](const call_options&) { return std::make_unique<sqlite::detail::connection>(handle); },
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

// ---- lifecycle ----

void queue::close() {
  if (impl_) impl_->close();
}
bool queue::closed() const { return !impl_ || impl_->is_closed(); }
std::size_t queue::warm(std::size_t connections) noexcept {
  if (!impl_ || impl_->is_closed()) return 0;
  if (impl_->adopted_pool) return impl_->adopted_pool->prefill(connections);
  return impl_->db ? impl_->db->impl().prefill(connections) : 0;
}
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
