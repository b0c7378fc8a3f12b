// The named workloads (workloads.hpp). One driver per capability knows how to
// publish, preload, claim + ack and run steady consumers; the workload
// functions time them the same way for all three.
#include "workloads.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/consumer.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"
#include "spool/outbox/envelope.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::bench {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
namespace mq = spool::mq;
namespace ops = spool::ops;
namespace ob = spool::outbox;

// The one queue name, op type and topic the bench writes; run() refuses a
// database holding any other rows in these tables, because it empties them.
constexpr const char* bench_name = "spool_bench";
constexpr auto long_claim = 600s;  // no claim may lapse in a slow run: a re-delivery would skew counts
constexpr int max_workers = 16;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
}

// Resident set of this process in kB (Linux /proc), 0 where unknown.
long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto idx = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size()))) - 1;
  return sorted[std::min(idx, sorted.size() - 1)];
}

// v rounded to `decimals` places (divided, not multiplied, back so the JSON shows 12.3,
// not 12.300000000000001).
double round_to(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

// Latencies (ms) collected by handlers on many threads.
struct latency_log {
  std::mutex m;
  std::vector<double> ms;
  void add(std::int64_t stamp_ns) {
    const double v = static_cast<double>(now_ns() - stamp_ns) / 1e6;
    std::lock_guard lock(m);
    ms.push_back(v);
  }
  std::size_t size() {
    std::lock_guard lock(m);
    return ms.size();
  }
};

// What one claim + ack round did.
struct consumed {
  long claimed = 0;
  long acked = 0;
};

// A capability under test. Methods may be called from many threads at once
// where the library allows it (consume); the rest from the driving thread.
class driver {
 public:
  explicit driver(database db) : db_(std::move(db)) {}
  virtual ~driver() = default;
  driver(const driver&) = delete;
  driver& operator=(const driver&) = delete;

  [[nodiscard]] virtual std::string capability() const = 0;
  [[nodiscard]] virtual std::string table() const = 0;
  // Rows in the bench's tables that the bench did not write.
  [[nodiscard]] virtual std::int64_t foreign_rows() = 0;
  // Empties the bench's tables (TRUNCATE on PostgreSQL: no dead rows carry over).
  virtual void clear() = 0;
  // n messages in one transaction, through the library's call for it.
  virtual void publish(int n) = 0;
  // n messages waiting, in the row format the library writes; not timed.
  virtual void preload(long n) = 0;
  // Later preloads spread their rows over `groups` message groups (0:
  // none); false when the capability has no groups (only mq has).
  virtual bool set_groups(long groups) { return groups == 0; }
  // Rows still waiting to be consumed.
  [[nodiscard]] virtual std::int64_t waiting() = 0;
  // One claim of up to batch messages and their acks, as worker `worker`.
  virtual consumed consume(int batch, int worker) = 0;
  // Whether a claim of `batch` exists (1 and 100 in every capability).
  [[nodiscard]] virtual bool supports_batch(int batch) const { return batch == 1 || batch == 100; }
  // W4: `consumers` consumers with wake-ups on; publish(stamp) is called by
  // the workload at the target rate; every handled message's stamp goes to log.
  virtual void start_steady(int consumers, latency_log& log) = 0;
  virtual void publish_stamped(std::int64_t stamp_ns) = 0;
  virtual void stop_steady() = 0;
  // runtime: the capability's runtime (consumer, worker pool, relay) with a
  // no-op handler, `workers` wide, claiming `batch` at a time; its name.
  virtual std::string start_runtime(int workers, int batch) = 0;
  virtual void stop_runtime() = 0;

  [[nodiscard]] bool pg() const { return db_.kind() == engine::postgres; }
  database& db() { return db_; }
  void analyze() {
    // VACUUM as well as ANALYZE: since PostgreSQL 13 autovacuum also
    // vacuums insert-only tables, so a production backlog this old has had
    // its visibility map set and hint bits written; measuring the first
    // touch of a million fresh rows would time the preload, not the queue.
    if (pg()) db_.exec("VACUUM (ANALYZE) " + table());
  }
  std::int64_t count(const std::string& sql) { return std::stoll(db_.exec(sql).at(0).at(0).value_or("0")); }
  // SQLite preload: n rows written through the library, `per_call` rows per
  // call and `calls_per_tx` calls per transaction (one commit, one fsync).
  template <class Write>
  void sqlite_preload(long n, long per_call, int calls_per_tx, Write write) {
    for (long done = 0; done < n;) {
      sqlite::tx tx(db_);
      for (int k = 0; k < calls_per_tx && done < n; ++k) {
        const long b = std::min(per_call, n - done);
        write(tx, static_cast<std::size_t>(b));
        done += b;
      }
      tx.commit();
    }
  }
  void wipe(std::initializer_list<const char*> tables) {
    for (const char* t : tables) db_.exec((pg() ? "TRUNCATE " : "DELETE FROM ") + std::string(t));
  }
  // PostgreSQL: copies the row with id `tmpl` n times in one INSERT … SELECT
  // over generate_series, each copy with a fresh id whose last 12 hex digits
  // count up (ids keep their length and form) and, for time-ordered tables,
  // a time that many microseconds before the template's, so the copies keep a
  // strict order. `sql` has $1 = count and $2 = the template id.
  void clone(const std::string& sql, const std::string& tmpl, long n) {
    if (n > 0) db_.exec(sql, {static_cast<std::int64_t>(n), tmpl});
  }

 protected:
  database db_;
};

// ---------------------------------------------------------------- mq

class mq_driver final : public driver {
 public:
  mq_driver(database db, int payload_bytes) : driver(std::move(db)), payload_bytes_(payload_bytes) {
    q_ = std::make_unique<mq::queue>(db_, opts(false));
    msg_ = make_message(payload_bytes_, "");
  }
  std::string capability() const override { return "mq"; }
  std::string table() const override { return "queue_messages"; }
  std::int64_t foreign_rows() override {
    return count(
        fmt::format("SELECT (SELECT count(*) FROM queue_messages WHERE queue_name <> '{0}') + "
                    "(SELECT count(*) FROM queue_messages_failed WHERE queue_name <> '{0}')",
                    bench_name));
  }
  void clear() override { wipe({"queue_messages", "queue_messages_failed"}); }
  void publish(int n) override {
    if (n == 1) {
      (void)q_->publish(msg_);
    } else {
      (void)q_->publish_batch(std::vector<mq::message>(static_cast<std::size_t>(n), msg_));
    }
  }
  void preload(long n) override {
    if (n <= 0) return;
    if (!pg()) {
      long k = 0;
      sqlite_preload(n, 500, 20, [&](sqlite::tx& tx, std::size_t b) {
        std::vector<mq::message> batch(b, msg_);
        if (groups_ > 0) {
          for (auto& m : batch) m.message_group_id = fmt::format("g{}", k++ % groups_);
        }
        (void)q_->publish_batch(tx, batch);
      });
      return;
    }
    auto first = msg_;
    if (groups_ > 0) first.message_group_id = "g0";
    const auto tmpl = q_->publish(first).ids.at(0);
    clone(fmt::format("INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, "
                      "visible_at, payload, "
                      "created_at, receive_count) "
                      "SELECT n.id, t.queue_name, {1}, t.receipt_handle, t.visible_at, "
                      "replace(t.payload, t.id, n.id), t.created_at, t.receive_count "
                      "FROM queue_messages t, generate_series(1, $1::bigint) g, "
                      "LATERAL (SELECT left(t.id, 24) || lpad(to_hex(g), 12, '0') AS id) n "
                      "WHERE t.queue_name = '{0}' AND t.id = $2 ON CONFLICT DO NOTHING",
                      bench_name,
                      groups_ > 0 ? fmt::format("'g' || (g % {})", groups_) : std::string("t.message_group_id")),
          tmpl, n - 1);
  }
  bool set_groups(long groups) override {
    groups_ = groups;
    return true;
  }
  std::int64_t waiting() override { return count("SELECT count(*) FROM queue_messages"); }
  consumed consume(int batch, int) override {
    const auto got = q_->poll(static_cast<std::size_t>(batch));
    consumed c{static_cast<long>(got.size()), 0};
    if (got.empty()) return c;
    if (got.size() == 1) {
      q_->ack(got.front().receipt);
      c.acked = 1;
      return c;
    }
    std::vector<std::string> receipts;
    receipts.reserve(got.size());
    for (const auto& d : got) receipts.push_back(d.receipt);
    for (auto st : q_->ack_batch(receipts)) c.acked += st == mq::ack_status::acked ? 1 : 0;
    return c;
  }
  void start_steady(int consumers, latency_log& log) override {
    steady_q_ = std::make_unique<mq::queue>(db_, opts(true));
    mq::consumer_options co;
    co.concurrency = static_cast<std::size_t>(consumers);
    consumer_ = std::make_unique<mq::consumer>(
        *steady_q_,
        [&log](const mq::delivered_message& d) {
          for (const auto& [k, v] : d.body.extra) {
            if (k == "t") log.add(std::stoll(v));
          }
        },
        co);
    consumer_->start();
  }
  void publish_stamped(std::int64_t stamp_ns) override {
    (void)steady_q_->publish(make_message(payload_bytes_, std::to_string(stamp_ns)));
  }
  void stop_steady() override {
    consumer_->stop();
    consumer_.reset();
    steady_q_.reset();
  }
  std::string start_runtime(int workers, int batch) override {
    mq::consumer_options co;
    co.concurrency = static_cast<std::size_t>(workers);
    co.batch = static_cast<std::size_t>(batch);
    co.idle_wait = 100ms;
    consumer_ = std::make_unique<mq::consumer>(*q_, [](const mq::delivered_message&) {}, co);
    consumer_->start();
    return "mq::consumer";
  }
  void stop_runtime() override {
    consumer_->stop();
    consumer_.reset();
  }

 private:
  mq::queue_options opts(bool notify) const {
    mq::queue_options o;
    o.name = bench_name;
    o.visibility_timeout = long_claim;
    o.notify = notify && pg();
    return o;
  }
  // A message whose encoded form is payload_bytes long (or as short as the
  // fixed fields allow), ungrouped, id left empty (publish assigns a UUIDv7,
  // and that cost belongs in the measurement); stamp, when given, in "t".
  static mq::message make_message(int payload_bytes, const std::string& stamp) {
    mq::message m;
    m.pool_code = "bench";
    m.mediation_type = "HTTP";
    m.mediation_target = "https://bench.example.com/hook";
    if (!stamp.empty()) m.extra.push_back({"t", stamp});
    mq::message sized = m;
    sized.id = std::string(36, '0');
    sized.extra.push_back({"pad", "\"\""});
    const long base = static_cast<long>(mq::encode(sized).size());
    const long pad = std::max(0L, payload_bytes - base);
    m.extra.push_back({"pad", "\"" + std::string(static_cast<std::size_t>(pad), 'x') + "\""});
    return m;
  }

  int payload_bytes_;
  long groups_ = 0;
  mq::message msg_;
  std::unique_ptr<mq::queue> q_;
  std::unique_ptr<mq::queue> steady_q_;
  std::unique_ptr<mq::consumer> consumer_;
};

// ---------------------------------------------------------------- ops

class ops_driver final : public driver {
 public:
  ops_driver(database db, int payload_bytes) : driver(std::move(db)), payload_bytes_(payload_bytes) {
    q_ = std::make_unique<ops::queue>(db_, qopts(false));
    op_ = make_op(payload_bytes_, std::nullopt);
  }
  std::string capability() const override { return "ops"; }
  std::string table() const override { return "ops_queue"; }
  std::int64_t foreign_rows() override {
    return count(fmt::format("SELECT count(*) FROM ops_queue WHERE type <> '{}'", bench_name));
  }
  void clear() override { wipe({"ops_queue"}); }
  void publish(int n) override {
    if (n == 1) {
      (void)q_->enqueue(op_);
    } else {
      (void)q_->enqueue_batch(std::vector<ops::new_op>(static_cast<std::size_t>(n), op_));
    }
  }
  void preload(long n) override {
    if (n <= 0) return;
    if (!pg()) {
      sqlite_preload(n, 100, 100, [&](sqlite::tx& tx, std::size_t b) {
        (void)q_->enqueue_batch(tx, std::vector<ops::new_op>(b, op_));
      });
      return;
    }
    const auto tmpl = q_->enqueue(op_).id;
    clone(
        "INSERT INTO ops_queue (id, type, payload, status, priority, attempts, max_attempts, last_error, "
        "enqueued_at, started_at, finished_at, not_before, dedup_key, lease_owner, lease_token, "
        "heartbeat_at) "
        "SELECT left(t.id, 20) || lpad(to_hex(g), 12, '0'), t.type, t.payload, t.status, t.priority, "
        "t.attempts, "
        "t.max_attempts, t.last_error, t.enqueued_at - ($1::bigint - g + 1) * interval '1 microsecond', "
        "t.started_at, t.finished_at, t.not_before, t.dedup_key, t.lease_owner, t.lease_token, "
        "t.heartbeat_at "
        "FROM ops_queue t, generate_series(1, $1::bigint) g WHERE t.id = $2 ON CONFLICT DO NOTHING",
        tmpl, n - 1);
  }
  std::int64_t waiting() override { return count("SELECT count(*) FROM ops_queue WHERE status = 'pending'"); }
  consumed consume(int batch, int worker) override {
    const std::string& owner = owners_.at(static_cast<std::size_t>(worker));
    if (batch > 1) {
      const auto claimed = q_->dequeue_batch(static_cast<std::size_t>(batch), types_, owner);
      if (claimed.empty()) return {};
      std::vector<ops::lease> leases;
      leases.reserve(claimed.size());
      for (const auto& c : claimed) leases.push_back({c.id, c.lease_token.value_or("")});
      const auto refused = q_->ack_batch(leases);
      return {static_cast<long>(claimed.size()), static_cast<long>(claimed.size() - refused.size())};
    }
    auto got = q_->dequeue(types_, owner);
    if (!got) return {};
    // An ack that met a busy database is retried with the same token: the
    // replay of a recorded ack succeeds (op-queue.md §4.5).
    for (int attempt = 1;; ++attempt) {
      try {
        q_->ack(got->id, got->lease_token.value_or(""));
        return {1, 1};
      } catch (const spool::error& e) {
        if ((!e.retryable() && e.code() != errc::in_doubt) || attempt >= 100) throw;
        std::this_thread::sleep_for(10ms);
      }
    }
  }
  void start_steady(int consumers, latency_log& log) override {
    steady_q_ = std::make_unique<ops::queue>(db_, qopts(true));
    ops::worker_pool_options po;
    po.workers = consumers;
    pool_ = std::make_unique<ops::worker_pool>(*steady_q_, po);
    pool_->add_handler(bench_name, [&log](const ops::op& o, ops::handler_context&) {
      log.add(o.payload.at("t").get<std::int64_t>());
    });
    pool_->start();
  }
  void publish_stamped(std::int64_t stamp_ns) override {
    (void)steady_q_->enqueue(make_op(payload_bytes_, stamp_ns));
  }
  void stop_steady() override {
    (void)pool_->stop();
    pool_.reset();
    steady_q_.reset();
  }
  std::string start_runtime(int workers, int batch) override {
    ops::worker_pool_options po;
    po.workers = workers;
    po.batch = static_cast<std::size_t>(batch);
    po.poll_interval = 100ms;
    po.rescuer = false;
    pool_ = std::make_unique<ops::worker_pool>(*q_, po);
    pool_->add_handler(bench_name, [](const ops::op&, ops::handler_context&) {});
    pool_->start();
    return "ops::worker_pool";
  }
  void stop_runtime() override {
    (void)pool_->stop();
    pool_.reset();
  }

 private:
  ops::queue_options qopts(bool notify) const {
    ops::queue_options o;
    o.notify = notify && pg();
    return o;
  }
  // Type "spool_bench", payload {"pad":"xx…"} (and "t" when stamped) whose
  // serialised form is about payload_bytes long, no id (drawn from the OS
  // CSPRNG by enqueue, a cost that belongs in the measurement), no dedup key.
  static ops::new_op make_op(int payload_bytes, std::optional<std::int64_t> stamp) {
    constexpr int overhead = 10;  // {"pad":""}
    ops::new_op o;
    o.type = bench_name;
    o.payload = {{"pad", std::string(static_cast<std::size_t>(std::max(0, payload_bytes - overhead)), 'x')}};
    if (stamp) o.payload["t"] = *stamp;
    return o;
  }

  int payload_bytes_;
  ops::new_op op_;
  std::vector<std::string> types_{bench_name};
  std::vector<std::string> owners_ = [] {
    std::vector<std::string> v;
    for (int i = 0; i < max_workers; ++i) v.push_back(fmt::format("bench-{}", i));
    return v;
  }();
  std::unique_ptr<ops::queue> q_;
  std::unique_ptr<ops::queue> steady_q_;
  std::unique_ptr<ops::worker_pool> pool_;
};

// ---------------------------------------------------------------- outbox

class outbox_driver final : public driver {
 public:
  outbox_driver(database db, int payload_bytes) : driver(std::move(db)), payload_(payload_bytes, 'x') {
    ob::writer_options wo;
    wo.max_batch_size = 500;
    writer_ = std::make_unique<ob::writer>(db_, wo);
    ob::store_options so;
    so.max_lease_duration = long_claim;
    store_ = std::make_unique<ob::store>(db_, so);
  }
  std::string capability() const override { return "outbox"; }
  std::string table() const override { return "outbox_messages"; }
  std::int64_t foreign_rows() override {
    return count(fmt::format("SELECT count(*) FROM outbox_messages WHERE topic <> '{}'", bench_name));
  }
  void clear() override { wipe({"outbox_messages"}); }
  void publish(int n) override { write(*writer_, n, std::nullopt); }
  void preload(long n) override {
    if (n <= 0) return;
    if (!pg()) {
      sqlite_preload(n, 500, 20, [&](sqlite::tx& tx, std::size_t b) {
        (void)writer_->insert_batch(tx, build(static_cast<int>(b), std::nullopt));
      });
      return;
    }
    pg::tx tx(db_);
    const auto tmpl = writer_->insert(tx, build(1, std::nullopt).front()).id;
    tx.commit();
    clone(
        "INSERT INTO outbox_messages (id, topic, payload, payload_version, metadata, ordering_key, "
        "idempotency_key, state, claim_count, failure_count, available_at, created_at, updated_at) "
        "SELECT left(t.id, 24) || lpad(to_hex(g), 12, '0'), t.topic, t.payload, t.payload_version, "
        "t.metadata, "
        "t.ordering_key, t.idempotency_key, t.state, t.claim_count, t.failure_count, "
        "t.available_at - ($1::bigint - g + 1) * interval '1 microsecond', "
        "t.created_at - ($1::bigint - g + 1) * interval '1 microsecond', "
        "t.updated_at - ($1::bigint - g + 1) * interval '1 microsecond' "
        "FROM outbox_messages t, generate_series(1, $1::bigint) g WHERE t.id = $2 ON CONFLICT DO NOTHING",
        tmpl, n - 1);
  }
  std::int64_t waiting() override {
    return count("SELECT count(*) FROM outbox_messages WHERE state IN ('pending', 'leased')");
  }
  consumed consume(int batch, int worker) override {
    const auto got = store_->claim(owners_.at(static_cast<std::size_t>(worker)),
                                   static_cast<std::size_t>(batch), long_claim);
    consumed c{static_cast<long>(got.size()), 0};
    if (got.size() == 1) {
      store_->mark_delivered(got[0].ref);  // the single-row path, as a relay with one slot
      ++c.acked;
    } else if (!got.empty()) {
      std::vector<ob::lease_ref> refs;
      refs.reserve(got.size());
      for (const auto& cm : got) refs.push_back(cm.ref);
      for (const bool ok : store_->mark_delivered_batch(refs)) c.acked += ok ? 1 : 0;
    }
    return c;
  }
  void start_steady(int consumers, latency_log& log) override {
    ob::writer_options wo;
    wo.notify = pg();
    steady_writer_ = std::make_unique<ob::writer>(db_, wo);
    auto sink = ob::make_callback_sink([&log](const ob::claimed_message& m, std::stop_token) {
      log.add(std::stoll(m.message.payload));
      return ob::sink_outcome{};
    });
    ob::relay_options ro;
    ro.notify = true;
    ro.max_in_flight = static_cast<std::size_t>(consumers);  // the relay's consumers are its in-flight slots
    relay_ = std::make_unique<ob::relay>(*store_, sink, ro);
    relay_->start();
  }
  void publish_stamped(std::int64_t stamp_ns) override { write(*steady_writer_, 1, stamp_ns); }
  void stop_steady() override {
    relay_->stop();
    relay_.reset();
    steady_writer_.reset();
  }
  // The relay's sink calls are the workers; each may have a claim's worth of
  // leases queued (max_in_flight = workers × batch), as the loop's workers do.
  std::string start_runtime(int workers, int batch) override {
    auto sink = ob::make_callback_sink([](const ob::claimed_message&, std::stop_token) { return ob::sink_outcome{}; });
    ob::relay_options ro;
    ro.sink_concurrency = static_cast<std::size_t>(workers);
    ro.claim_batch = static_cast<std::size_t>(batch);
    ro.max_in_flight = static_cast<std::size_t>(workers) * static_cast<std::size_t>(batch);
    ro.poll_interval = 100ms;
    relay_ = std::make_unique<ob::relay>(*store_, sink, ro);
    relay_->start();
    return "outbox::relay";
  }
  void stop_runtime() override {
    relay_->stop();
    relay_.reset();
  }

 private:
  // n envelopes built as an application would (UUIDv7 ids from
  // envelope_builder; building them is timed); payload "<stamp> xx…" when stamped.
  std::vector<ob::envelope> build(int n, std::optional<std::int64_t> stamp) const {
    ob::envelope_params params;
    params.topic = bench_name;
    params.payload = stamp ? std::to_string(*stamp) + " " + payload_ : payload_;
    std::vector<ob::envelope> v;
    v.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) v.push_back(builder_.build(params));
    return v;
  }
  // One caller transaction of n envelopes, as an application writes them.
  void write(ob::writer& w, int n, std::optional<std::int64_t> stamp) {
    auto batch = build(n, stamp);
    if (pg()) {
      pg::tx tx(db_);
      if (n == 1) {
        (void)w.insert(tx, batch.front());
      } else {
        (void)w.insert_batch(tx, batch);
      }
      tx.commit();
    } else {
      sqlite::tx tx(db_);
      if (n == 1) {
        (void)w.insert(tx, batch.front());
      } else {
        (void)w.insert_batch(tx, batch);
      }
      tx.commit();
    }
  }

  std::string payload_;
  ob::envelope_builder builder_;
  std::vector<std::string> owners_ = [] {
    std::vector<std::string> v;
    for (int i = 0; i < max_workers; ++i) v.push_back(fmt::format("bench-{}", i));
    return v;
  }();
  std::unique_ptr<ob::writer> writer_;
  std::unique_ptr<ob::store> store_;
  std::unique_ptr<ob::writer> steady_writer_;
  std::unique_ptr<ob::relay> relay_;
};

// ---------------------------------------------------------------- workloads

struct runner {
  const options& o;
  const line_sink& out;
  const progress_sink& progress;
  engine_facts facts;
  bool ok = true;

  nlohmann::ordered_json line(driver& d, const std::string& workload, long messages, int producer_batch,
                              int consumer_batch, int workers, bool held) const {
    nlohmann::ordered_json j = {
        {"engine", facts.engine},
        {"capability", d.capability()},
        {"workload", workload},
        {"messages", messages},
        {"payload_bytes", o.payload_bytes},
        {"producer_batch", producer_batch},
        {"consumer_batch", consumer_batch},
        {"workers", workers},
        {"synchronous_commit", facts.synchronous},
        {"held_snapshot", held},
    };
    if (!facts.fsync.empty()) j["fsync"] = facts.fsync;
    return j;
  }
  void emit(const nlohmann::ordered_json& j) const { out(j.dump()); }
  void fail(const std::string& what) {
    ok = false;
    progress(fmt::format("FAILED: {}", what));
  }

  // W1 / W2: one thread publishing `batch` messages per transaction until
  // `total` are in or max_seconds passed.
  void publish(driver& d, const std::string& workload, long total, int batch) {
    progress(fmt::format("{} {} {} (producer batch {}, up to {} messages)", facts.engine, d.capability(),
                         workload, batch, total));
    d.clear();
    const auto t0 = steady::now();
    const auto cap = std::chrono::duration<double>(o.max_seconds);
    long done = 0;
    while (done < total && steady::now() - t0 < cap) {
      const int k = static_cast<int>(std::min<long>(batch, total - done));
      d.publish(k);
      done += k;
    }
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    const auto waiting = d.waiting();
    if (waiting != done)
      fail(fmt::format("{} {}: published {}, {} waiting", d.capability(), workload, done, waiting));
    auto j = line(d, workload, done, batch, 0, 1, false);
    j["msgs_per_s"] = round_to(static_cast<double>(done) / seconds, 1);
    j["seconds"] = round_to(seconds, 3);
    j["complete"] = done == total;
    emit(j);
    d.clear();
  }

  // W3 (and held): `workers` threads looping claim(batch) + ack over a
  // preloaded backlog until it is empty or max_seconds passed.
  void drain(driver& d, int batch, int workers, bool held) {
    progress(fmt::format("{} {} W3 (consumer batch {}, {} workers, backlog {}{})", facts.engine,
                         d.capability(), batch, workers, o.backlog, held ? ", held snapshot" : ""));
    d.clear();
    d.preload(o.backlog);
    d.analyze();
    // The held session: its own connection, a REPEATABLE READ transaction
    // whose snapshot the SELECT takes, open until the drain ends. Rows the
    // drain deletes or updates stay visible to it, so nothing it touched can
    // be pruned or vacuumed during the run.
    std::optional<database> held_db;
    std::optional<pg::tx> held_tx;
    if (held) {
      database_options hdo;
      hdo.pool_size = 1;
      held_db.emplace(database::open(o.db, hdo));
      held_tx.emplace(*held_db);
      held_tx->exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
      held_tx->exec("SELECT count(*) FROM " + d.table());
    }
    std::atomic<long> claimed{0}, acked{0}, errors{0};
    std::atomic<bool> stop{false};
    std::atomic<int> running{workers};
    auto work = [&](int n) {
      int empty = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        try {
          const auto c = d.consume(batch, n);
          claimed += c.claimed;
          acked += c.acked;
          if (c.claimed == 0) {
            // Nothing claimable: the backlog is gone or the others hold the
            // rest (an op-queue claim can also lose a race). Look again a few
            // times before leaving, so no worker quits while rows remain.
            if (++empty >= 3) break;
            std::this_thread::sleep_for(1ms);
          } else {
            empty = 0;
          }
        } catch (const spool::error& e) {
          if (!e.retryable() || ++errors > 100) {
            progress(fmt::format("{} W3: {}", d.capability(), e.what()));
            errors += 1000;
            break;
          }
          std::this_thread::sleep_for(10ms);  // busy/unavailable: nothing was done, try again
        }
      }
      --running;
    };
    const auto t0 = steady::now();
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(workers));
    for (int i = 0; i < workers; ++i) threads.emplace_back(work, i);
    long peak_rss = 0;
    const auto cap = std::chrono::duration<double>(o.max_seconds);
    while (running.load() > 0) {
      peak_rss = std::max(peak_rss, rss_kb());
      if (steady::now() - t0 >= cap) stop = true;
      std::this_thread::sleep_for(20ms);
    }
    for (auto& t : threads) t.join();
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    if (held_tx) held_tx->rollback();

    const bool complete = !stop.load();
    const auto waiting = d.waiting();
    if (acked != claimed || errors >= 1000 || (complete && acked != o.backlog) ||
        waiting != o.backlog - acked) {
      fail(fmt::format("{} W3 batch {} x{}: claimed {}, acked {} of {}, {} still waiting, {} errors",
                       d.capability(), batch, workers, claimed.load(), acked.load(), o.backlog, waiting,
                       errors.load()));
    }
    auto j = line(d, "W3", acked, 0, batch, workers, held);
    j["backlog"] = o.backlog;
    j["msgs_per_s"] = round_to(static_cast<double>(acked) / seconds, 1);
    j["seconds"] = round_to(seconds, 3);
    j["complete"] = complete;
    j["rss_kb"] = peak_rss;
    emit(j);
    d.clear();
  }

  // runtime: the same backlog as W3, drained by the capability's runtime
  // with a no-op handler at the same width and claim size; the figure to set
  // beside the library loop's (W3) at the same concurrency.
  void drain_runtime(driver& d, int batch, int workers) {
    progress(fmt::format("{} {} runtime (claim {}, {} workers, backlog {})", facts.engine, d.capability(), batch,
                         workers, o.backlog));
    d.clear();
    d.preload(o.backlog);
    d.analyze();
    const auto t0 = steady::now();
    const std::string name = d.start_runtime(workers, batch);
    const auto cap = std::chrono::duration<double>(o.max_seconds);
    std::int64_t waiting = o.backlog;
    while ((waiting = d.waiting()) > 0 && steady::now() - t0 < cap) std::this_thread::sleep_for(5ms);
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    d.stop_runtime();
    const long done = o.backlog - static_cast<long>(waiting);
    auto j = line(d, "runtime", done, 0, batch, workers, false);
    j["runtime"] = name;
    j["backlog"] = o.backlog;
    j["msgs_per_s"] = round_to(static_cast<double>(done) / seconds, 1);
    j["seconds"] = round_to(seconds, 3);
    j["complete"] = waiting == 0;
    emit(j);
    d.clear();
  }

  // Backlog scaling: with `size` rows waiting, one worker runs claim(1) + ack
  // cycles; the cost per message is the mean cycle time.
  void backlog(driver& d, long size, long groups) {
    const long cycles = std::max(1L, std::min(o.backlog_cycles, size / 2));
    progress(fmt::format("{} {} backlog {} ({} cycles{})", facts.engine, d.capability(), size, cycles,
                         groups > 0 ? fmt::format(", {} groups", groups) : ""));
    (void)d.set_groups(groups);
    d.clear();
    const auto l0 = steady::now();
    d.preload(size);
    d.analyze();
    const double load_seconds = std::chrono::duration<double>(steady::now() - l0).count();
    long acked = 0;
    const auto t0 = steady::now();
    for (long i = 0; i < cycles; ++i) acked += d.consume(1, 0).acked;
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    if (acked != cycles)
      fail(fmt::format("{} backlog {}: acked {} of {} cycles", d.capability(), size, acked, cycles));
    auto j = line(d, "backlog", acked, 0, 1, 1, false);
    j["backlog"] = size;
    j["msgs_per_s"] = round_to(static_cast<double>(acked) / seconds, 1);
    j["us_per_msg"] = round_to(seconds * 1e6 / static_cast<double>(std::max(1L, acked)), 1);
    j["seconds"] = round_to(seconds, 3);
    j["load_seconds"] = round_to(load_seconds, 3);
    j["groups"] = groups;
    emit(j);
    (void)d.set_groups(0);
    d.clear();
  }

  // W4: a producer publishing one message per transaction at w4_rate for
  // w4_seconds while w4_consumers consumers with wake-ups on handle them;
  // latency from just before the publish call to the handler's start.
  void steady_rate(driver& d) {
    progress(fmt::format("{} {} W4 ({} msgs/s for {} s, {} consumers)", facts.engine, d.capability(),
                         o.w4_rate, o.w4_seconds, o.w4_consumers));
    d.clear();
    latency_log log;
    d.start_steady(o.w4_consumers, log);
    std::this_thread::sleep_for(200ms);  // consumers idle and listening before the first publish
    const auto total = static_cast<long>(std::llround(o.w4_rate * o.w4_seconds));
    const auto period =
        std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(1.0 / o.w4_rate));
    const auto t0 = steady::now();
    for (long i = 0; i < total; ++i) {
      std::this_thread::sleep_until(t0 + i * period);
      d.publish_stamped(now_ns());
    }
    const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
    const auto deadline = steady::now() + 30s;
    while (log.size() < static_cast<std::size_t>(total) && steady::now() < deadline)
      std::this_thread::sleep_for(5ms);
    const long peak_rss = rss_kb();
    d.stop_steady();
    std::vector<double> ms;
    {
      std::lock_guard lock(log.m);
      ms = log.ms;
    }
    std::sort(ms.begin(), ms.end());
    if (static_cast<long>(ms.size()) != total) {
      fail(fmt::format("{} W4: handled {} of {}", d.capability(), ms.size(), total));
    }
    auto j = line(d, "W4", static_cast<long>(ms.size()), 1, 1, o.w4_consumers, false);
    j["target_msgs_per_s"] = o.w4_rate;
    j["wakeups"] = d.pg() ? "notify" : "in-process";
    j["msgs_per_s"] = round_to(static_cast<double>(total) / seconds, 1);
    j["p50_ms"] = round_to(percentile(ms, 0.50), 3);
    j["p95_ms"] = round_to(percentile(ms, 0.95), 3);
    j["p99_ms"] = round_to(percentile(ms, 0.99), 3);
    j["max_ms"] = round_to(ms.empty() ? 0 : ms.back(), 3);
    j["seconds"] = round_to(seconds, 3);
    j["rss_kb"] = peak_rss;
    emit(j);
    d.clear();
  }
};

bool selected(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

void check_names(const std::vector<std::string>& given, const std::vector<std::string>& known,
                 const char* what) {
  for (const auto& g : given) {
    if (!selected(known, g)) {
      throw error(errc::invalid_argument,
                  fmt::format("unknown {} '{}' (expected one of {})", what, g, fmt::join(known, ", ")));
    }
  }
}

}  // namespace

options quick(options o) {
  o.w1_messages = std::min(o.w1_messages, 200L);
  o.w2_messages = std::min(o.w2_messages, 1000L);
  o.backlog = std::min(o.backlog, 200L);
  o.backlog_sizes = {100, 1000};
  o.backlog_groups = {0, 10};
  o.backlog_cycles = std::min(o.backlog_cycles, 50L);
  o.w4_rate = std::min(o.w4_rate, 100.0);
  o.w4_seconds = std::min(o.w4_seconds, 1.0);
  o.max_seconds = std::min(o.max_seconds, 20.0);
  return o;
}

bool run(const options& o, const line_sink& out, const progress_sink& progress) {
  check_names(o.capabilities, {"mq", "ops", "outbox"}, "capability");
  check_names(o.workloads, {"W1", "W2", "W3", "W4", "backlog", "held", "runtime"}, "workload");
  for (int w : o.workers) {
    if (w < 1 || w > max_workers) {
      throw error(errc::invalid_argument, fmt::format("workers {} is outside 1..{}", w, max_workers));
    }
  }
  database_options dbo;
  dbo.pool_size = max_workers + 4;  // every worker its connection, plus pools' heartbeaters and rescuers
  const std::vector<std::string> sync_names{"off", "normal", "full", "extra"};
  check_names({o.sqlite_synchronous}, sync_names, "SQLite synchronous level");
  dbo.sqlite_sync = static_cast<sqlite_synchronous>(
      std::find(sync_names.begin(), sync_names.end(), o.sqlite_synchronous) - sync_names.begin());
  auto db = database::open(o.db, dbo);
  (void)spool::migrate(db);
  runner r{o, out, progress, describe(db)};

  for (const auto& cap : o.capabilities) {
    std::unique_ptr<driver> d;
    if (cap == "mq") d = std::make_unique<mq_driver>(db, o.payload_bytes);
    if (cap == "ops") d = std::make_unique<ops_driver>(db, o.payload_bytes);
    if (cap == "outbox") d = std::make_unique<outbox_driver>(db, o.payload_bytes);
    if (const auto foreign = d->foreign_rows(); foreign > 0) {
      throw error(
          errc::invalid_argument,
          fmt::format("{} holds {} rows the bench did not write; the bench empties its tables, so run it "
                      "on a scratch database",
                      d->table(), foreign));
    }
    if (selected(o.workloads, "W1")) r.publish(*d, "W1", o.w1_messages, 1);
    if (selected(o.workloads, "W2")) r.publish(*d, "W2", o.w2_messages, 100);
    if (selected(o.workloads, "W3")) {
      for (int batch : o.consumer_batches) {
        if (!d->supports_batch(batch)) {
          progress(fmt::format("{} W3: no batch claim of {} in this capability; skipped", cap, batch));
          continue;
        }
        for (int workers : o.workers) r.drain(*d, batch, workers, false);
      }
    }
    if (selected(o.workloads, "runtime")) {
      for (int batch : o.consumer_batches) {
        for (int workers : o.workers) r.drain_runtime(*d, batch, workers);
      }
    }
    if (selected(o.workloads, "held")) {
      if (d->pg()) {
        const int batch = d->supports_batch(100) ? 100 : 1;
        if (!selected(o.workloads, "W3")) r.drain(*d, batch, 4, false);  // the clean run beside it
        r.drain(*d, batch, 4, true);
      } else {
        progress(fmt::format("{} held: PostgreSQL only; skipped on SQLite", cap));
      }
    }
    if (selected(o.workloads, "backlog")) {
      for (long groups : o.backlog_groups) {
        if (!d->set_groups(groups)) continue;  // groups are an mq notion
        for (long size : o.backlog_sizes) r.backlog(*d, size, groups);
      }
    }
    if (selected(o.workloads, "W4")) r.steady_rate(*d);
  }
  return r.ok;
}

}  // namespace spool::bench
