// The message queue's logic above the store seam: receipts, decoding and
// quarantine, counters, stop. Everything SQL is in store_*.cpp.
#include "spool/mq/queue.hpp"

#include <fmt/format.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "common/call_guard.hpp"
#include "common/claim_gate.hpp"
#include "common/identifier.hpp"
#include "common/log.hpp"
#include "common/stop_gate.hpp"
#include "common/text/utf8.hpp"
#include "common/uuid.hpp"
#include "engine/database_impl.hpp"
#include "mq/store.hpp"
#include "spool/error.hpp"
#include "spool/tx.hpp"

namespace spool::mq {

namespace {

constexpr std::int64_t max_delay_s = 4294967295;  // 2^32 - 1 (§5.4)

std::int64_t checked_delay(std::chrono::seconds d, const char* what) {
  if (d.count() < 0 || d.count() > max_delay_s) {
    throw error(errc::invalid_argument,
                fmt::format("{} must be 0 … 4294967295 seconds, got {}", what, d.count()));
  }
  return d.count();
}

// Encodes a batch: ids assigned, sizes checked, nothing inserted on failure.
std::vector<detail::encoded_row> encode_rows(const std::vector<const std::string*>& queues,
                                             const std::vector<const message*>& msgs,
                                             std::size_t max_payload) {
  std::vector<detail::encoded_row> rows;
  rows.reserve(msgs.size());
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const message* m = msgs[i];
    message with_id;
    if (m->id.empty()) {
      with_id = *m;
      with_id.id = spool::detail::uuid_v7();
      m = &with_id;
    }
    detail::encoded_row r;
    r.queue_name = queues[i];
    r.id = m->id;
    r.group = m->message_group_id;
    try {
      r.payload = encode(*m);
    } catch (const error& e) {
      throw error(errc::invalid_argument,
                  fmt::format("message {} (id \"{}\"): {}", i, truncate_utf8(m->id, 64), e.what()),
                  e.reason());
    }
    if (r.payload.size() > max_payload) {
      throw error(errc::invalid_argument,
                  fmt::format("message {} (id \"{}\"): payload of {} bytes exceeds max_payload_bytes {}", i,
                              truncate_utf8(m->id, 64), r.payload.size(), max_payload),
                  "payload_too_large");
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

publish_result to_result(const std::vector<detail::encoded_row>& rows, const std::vector<bool>& inserted) {
  publish_result out;
  out.ids.reserve(rows.size());
  out.statuses.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out.ids.push_back(rows[i].id);
    out.statuses.push_back(inserted[i] ? publish_status::inserted : publish_status::already_present);
  }
  return out;
}

void check_queue_name(const std::string& name) {
  if (name.empty()) throw error(errc::invalid_argument, "queue name must not be empty");
  // The name is stored in queue_name (text): the same rule as the message's
  // strings (§3.1), on both engines, so SQLite does not store raw bytes that
  // PostgreSQL would refuse.
  if (!spool::detail::is_utf8(name)) {
    throw error(errc::invalid_argument,
                fmt::format("queue name \"{}\" is not valid UTF-8", truncate_utf8(name, 64)),
                "invalid_encoding");
  }
}

}  // namespace

bool detail::quarantine_row(store& st, const std::string& queue, const std::string& shown,
                            const std::string& id, const std::string& receipt, const std::string& reason) {
  const std::string text = truncate_utf8(reason, 1000);
  try {
    if (!st.quarantine(queue, id, receipt, text, {})) return false;  // the claim was gone: nothing moved
    spool::detail::log().warn(
        "malformed message moved to queue_messages_failed (queue {}, message id {}, reason {})", shown, id,
        text);
    return true;
  } catch (const std::exception& e) {
    spool::detail::log().warn("could not quarantine malformed message (queue {}, message id {}, error {})",
                              shown, id, e.what());
    return false;
  }
}

std::string receipt_id(std::string_view receipt) {
  if (receipt.size() < 37 || !spool::detail::is_uuid(receipt.substr(0, 36)) || receipt[36] != ':') {
    throw error(
        errc::invalid_argument,
        fmt::format("malformed receipt handle \"{}\": expected <uuid>:<id>", truncate_utf8(receipt, 80)),
        "malformed_receipt");
  }
  return std::string(receipt.substr(37));
}

struct queue::impl {
  impl(database d, queue_options o, bool owns) : db(std::move(d)), opts(std::move(o)), owns_db(owns) {
    check_queue_name(opts.name);
    shown = redact_password(opts.name);
    if (!opts.schema.empty()) spool::detail::validate_identifier("schema", opts.schema);
    if (opts.visibility_timeout.count() < 0) {
      throw error(errc::invalid_argument, fmt::format("visibility_timeout must not be negative, got {}",
                                                      opts.visibility_timeout.count()));
    }
    if (opts.poll_interval.count() <= 0)
      throw error(errc::invalid_argument, "poll_interval must be positive");
    visibility = opts.visibility_timeout.count() == 0 ? std::chrono::seconds{30} : opts.visibility_timeout;
    st = detail::make_store(db.impl(), opts.schema, opts.notify);
  }

  // Runs one database operation: refuses after stop, and reports a failure
  // caused by a racing stop as `stopped`, never as a driver error.
  template <class F>
  auto run(const call_options& call, F&& f) {
    return gate.run(
        [&] {
          ensure_tables(call);
          return f();
        },
        [&] { return stopped_error(); });
  }

  // The first call checks the tables within its own limits: a server that
  // does not answer must not hold a call with a deadline (issue 17).
  void ensure_tables(const call_options& call) {
    if (tables_checked.load(std::memory_order_acquire)) return;
    st->check_tables(call);
    tables_checked.store(true, std::memory_order_release);
  }

  [[nodiscard]] bool is_stopped() { return gate.closed(); }

  [[nodiscard]] error stopped_error() const {
    return error(errc::stopped, fmt::format("queue \"{}\" is stopped", shown));
  }

  void quarantine(const detail::claimed_row& row, const std::string& receipt, const std::string& reason) {
    if (detail::quarantine_row(*st, opts.name, shown, row.id, receipt, reason)) {
      quarantined.fetch_add(1, std::memory_order_relaxed);
    }
  }

  bool release(std::string_view receipt, std::chrono::seconds delay, std::atomic<std::uint64_t>& counter,
               const char* op, const call_options& call) {
    const std::string id = receipt_id(receipt);
    const std::int64_t d = checked_delay(delay, "delay");
    const bool matched = run(call, [&] { return st->release(opts.name, id, std::string(receipt), d, call); });
    if (matched) {
      counter.fetch_add(1, std::memory_order_relaxed);
      if (d == 0) db.impl().wake().raise();
    } else {
      spool::detail::log().debug("{}: stale receipt handle {} on queue {}", op, receipt, shown);
    }
    return matched;
  }

  database db;
  queue_options opts;
  std::string shown;  // the name as logs and errors show it (password redacted)
  bool owns_db;
  std::chrono::seconds visibility{30};
  std::unique_ptr<detail::store> st;
  std::atomic<bool> tables_checked{false};

  spool::detail::stop_gate gate;
  spool::detail::claim_gate claims{opts.claim_concurrency};  // after opts, which it reads

  std::atomic<std::uint64_t> polled{0}, acked{0}, nacked{0}, deferred{0}, quarantined{0};
};

queue::queue(database db, queue_options options)
    : impl_(std::make_unique<impl>(std::move(db), std::move(options), false)) {}

queue::queue(const queue_config& config, queue_options options) {
  database_options dbo;
  if (config.connections == 0) throw error(errc::invalid_argument, "connections must be at least 1");
  dbo.pool_size = config.connections;
  auto db = database::open(config.queue_uri, dbo);
  options.name = config.effective_name();
  if (options.visibility_timeout.count() == 0) options.visibility_timeout = config.effective_visibility();
  impl_ = std::make_unique<impl>(std::move(db), std::move(options), true);
}

queue::~queue() { stop(); }

std::vector<delivered_message> queue::poll(std::size_t max, const call_options& call) {
  if (impl_->is_stopped()) throw impl_->stopped_error();
  if (max == 0) return {};
  auto& s = *impl_;
  const std::string poll_uuid = spool::detail::uuid_v4();
  auto rows = s.run(call, [&] {
    const auto turn = s.claims.enter(max, call);
    return s.st->claim(s.opts.name, poll_uuid, max, s.visibility.count(), s.opts.strict_group_order, call);
  });

  std::vector<delivered_message> out;
  out.reserve(rows.size());
  for (auto& row : rows) {
    std::string receipt = poll_uuid + ":" + row.id;
    if (s.opts.max_receive_count > 0 && row.receive_count && *row.receive_count > s.opts.max_receive_count) {
      s.quarantine(row, receipt, "max receives exceeded");
      continue;
    }
    auto decoded = decode(row.payload);
    if (!decoded.ok()) {
      s.quarantine(row, receipt, decoded.error);
      continue;
    }
    if (s.opts.strict_validation) {
      if (auto why = strict_violation(*decoded.value, row.id); !why.empty()) {
        s.quarantine(row, receipt, why);
        continue;
      }
    }
    delivered_message d;
    d.body = std::move(*decoded.value);
    d.receipt = std::move(receipt);
    d.broker_message_id = row.id;
    d.queue = s.opts.name;
    d.receive_count = row.receive_count;
    d.created_at = row.created_at;
    d.group = std::move(row.group);
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const delivered_message& a, const delivered_message& b) {
    return std::tie(a.created_at, a.broker_message_id) < std::tie(b.created_at, b.broker_message_id);
  });
  s.polled.fetch_add(out.size(), std::memory_order_relaxed);
  return out;
}

std::vector<delivered_message> queue::poll_wait(std::size_t max, std::chrono::milliseconds timeout,
                                                const call_options& call) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (call.deadline) deadline = std::min(deadline, *call.deadline);
  auto& wake = impl_->db.impl().wake();
  if (impl_->opts.notify) impl_->db.impl().listen("spool_mq");
  // A cancelled call must not sleep out its poll interval.
  std::stop_callback on_cancel(call.stop, [&wake] { wake.poke(); });
  for (;;) {
    const auto seen = wake.generation();
    auto got = poll(max, call);
    if (!got.empty()) return got;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return got;
    wake.wait_until(seen, std::min(deadline, now + impl_->opts.poll_interval),
                    [&] { return impl_->is_stopped() || call.stop.stop_requested(); });
    if (impl_->is_stopped()) throw impl_->stopped_error();
    if (call.stop.stop_requested()) spool::detail::check_call(call, "poll_wait");
  }
}

void queue::ack(std::string_view receipt, std::string_view /*broker_message_id*/, const call_options& call) {
  const std::string id = receipt_id(receipt);
  if (!impl_->run(call, [&] { return impl_->st->ack(impl_->opts.name, id, std::string(receipt), call); })) {
    throw error(errc::not_found, fmt::format("ack: receipt handle not found: {}", receipt));
  }
  impl_->acked.fetch_add(1, std::memory_order_relaxed);
  // Only under strict group order can an ack unblock a message (Gate C): then
  // this process's waiting polls look again; without it, an ack wakes nobody.
  if (impl_->opts.strict_group_order) impl_->db.impl().wake().raise();
}

std::vector<ack_status> queue::ack_batch(const std::vector<std::string>& receipts, const call_options& call) {
  if (receipts.empty()) return {};
  std::vector<std::string> ids;
  ids.reserve(receipts.size());
  for (const auto& r : receipts) ids.push_back(receipt_id(r));
  const auto deleted =
      impl_->run(call, [&] { return impl_->st->ack_batch(impl_->opts.name, ids, receipts, call); });
  std::vector<ack_status> out;
  std::uint64_t n = 0;
  for (bool d : deleted) {
    out.push_back(d ? ack_status::acked : ack_status::not_found);
    n += d ? 1 : 0;
  }
  impl_->acked.fetch_add(n, std::memory_order_relaxed);
  if (n > 0 && impl_->opts.strict_group_order) impl_->db.impl().wake().raise();  // as for ack
  return out;
}

bool queue::nack(std::string_view receipt, std::chrono::seconds delay, const call_options& call) {
  return impl_->release(receipt, delay, impl_->nacked, "nack", call);
}

bool queue::defer(std::string_view receipt, std::chrono::seconds delay, const call_options& call) {
  return impl_->release(receipt, delay, impl_->deferred, "defer", call);
}

void queue::extend_visibility(std::string_view receipt, std::chrono::seconds window,
                              const call_options& call) {
  const std::string id = receipt_id(receipt);
  const std::int64_t w = checked_delay(window, "visibility");
  if (!impl_->run(call,
                  [&] { return impl_->st->extend(impl_->opts.name, id, std::string(receipt), w, call); })) {
    throw error(errc::not_found, fmt::format("extend_visibility: receipt handle not found: {}", receipt));
  }
}

publish_result queue::publish(const message& m, std::chrono::seconds delay, const call_options& call) {
  return publish_batch({m}, delay, call);
}

publish_result queue::publish_batch(const std::vector<message>& batch, std::chrono::seconds delay,
                                    const call_options& call) {
  if (impl_->is_stopped()) throw impl_->stopped_error();
  if (batch.empty()) return {};
  const std::int64_t d = checked_delay(delay, "delay");
  std::vector<const std::string*> queues(batch.size(), &impl_->opts.name);
  std::vector<const message*> msgs;
  msgs.reserve(batch.size());
  for (const auto& m : batch) msgs.push_back(&m);
  const auto rows = encode_rows(queues, msgs, impl_->opts.max_payload_bytes);
  const auto inserted = impl_->run(call, [&] { return impl_->st->insert(rows, d, call); });
  return to_result(rows, inserted);
}

publish_result queue::publish(spool::tx& tx, const message& m, std::chrono::seconds delay) {
  return publish_batch(tx, std::vector<message>{m}, delay);
}

publish_result queue::publish_batch(spool::tx& tx, const std::vector<message>& batch,
                                    std::chrono::seconds delay) {
  if (impl_->is_stopped()) throw impl_->stopped_error();
  if (tx.kind() != impl_->db.kind()) {
    throw error(
        errc::invalid_argument,
        fmt::format("queue {} is on another engine than the transaction passed to publish", impl_->shown),
        "wrong_engine");
  }
  std::vector<batch_row> rows;
  rows.reserve(batch.size());
  for (const auto& m : batch) rows.push_back({impl_->opts.name, m});
  return insert_batch(
      tx, rows, insert_options{impl_->opts.schema, impl_->opts.max_payload_bytes, delay, impl_->opts.notify});
}

publish_result insert_batch(spool::tx& tx, const std::vector<batch_row>& rows,
                            const insert_options& options) {
  if (rows.empty()) return {};
  if (!options.schema.empty()) spool::detail::validate_identifier("schema", options.schema);
  const std::int64_t d = checked_delay(options.delay, "delay");
  std::vector<const std::string*> queues;
  std::vector<const message*> msgs;
  for (const auto& r : rows) {
    check_queue_name(r.queue_name);
    queues.push_back(&r.queue_name);
    msgs.push_back(&r.body);
  }
  const auto encoded = encode_rows(queues, msgs, options.max_payload_bytes);
  return to_result(encoded, detail::insert_in(tx, options.schema, encoded, d, options.notify));
}

queue_metrics queue::metrics(const call_options& call) {
  const auto c = impl_->run(call, [&] { return impl_->st->metrics(impl_->opts.name, call); });
  return {impl_->opts.name, c.pending, c.in_flight, c.delayed, c.expired, counters()};
}

queue_counters queue::counters() const {
  return {impl_->opts.name,     impl_->polled.load(),   impl_->acked.load(),
          impl_->nacked.load(), impl_->deferred.load(), impl_->quarantined.load()};
}

std::vector<failed_message> queue::failed(std::size_t limit, const call_options& call) {
  return impl_->run(call, [&] { return impl_->st->failed(impl_->opts.name, limit, call); });
}

redrive_result queue::redrive(const redrive_options& options, const call_options& call) {
  std::string actor = options.actor;
  if (actor.empty()) {
    const passwd* pw = getpwuid(geteuid());
    actor = pw != nullptr ? pw->pw_name : std::to_string(geteuid());
  }
  const std::string reason = options.reason.empty() ? "redrive" : options.reason;
  const auto moved = impl_->run(call, [&] {
    return impl_->st->redrive(impl_->opts.name, options.ids, actor, reason, options.dry_run, call);
  });
  redrive_result out;
  for (const auto& [id, ok] : moved) (ok ? out.redriven : out.conflicts).push_back(id);
  for (const auto& id : options.ids) {
    const bool seen = std::any_of(moved.begin(), moved.end(), [&](const auto& m) { return m.first == id; });
    if (!seen && std::find(out.missing.begin(), out.missing.end(), id) == out.missing.end())
      out.missing.push_back(id);
  }
  return out;
}

bool queue::healthy() {
  if (impl_->is_stopped()) return false;
  return impl_->st->healthy();
}

const std::string& queue::identifier() const noexcept { return impl_->opts.name; }
std::chrono::seconds queue::visibility_timeout() const noexcept { return impl_->visibility; }

std::size_t queue::warm(std::size_t connections) noexcept {
  if (!impl_ || impl_->is_stopped()) return 0;
  return impl_->db.impl().prefill(connections);
}

void queue::stop() {
  if (!impl_) return;
  (void)impl_->gate.close();
  impl_->db.impl().wake().poke();  // poll_wait re-checks is_stopped()
  impl_->gate.wait_idle();
  if (impl_->owns_db) {
    impl_->db.impl().clear_idle();
  }
}

}  // namespace spool::mq
