// The outbox driver of the benchmark workloads: writer inserts, claim +
// mark_delivered on the store, steady consumers and the runtime through
// outbox::relay.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "bench_driver.hpp"
#include "spool/outbox/envelope.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"

namespace spool::bench {
namespace {

using namespace std::chrono_literals;
namespace ob = spool::outbox;

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
    handled_ = 0;
    auto sink = ob::make_callback_sink([this](const ob::claimed_message&, std::stop_token) {
      handled_.fetch_add(1, std::memory_order_relaxed);
      return ob::sink_outcome{};
    });
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
    spool::tx tx(db_);
    if (n == 1) {
      (void)w.insert(tx, batch.front());
    } else {
      (void)w.insert_batch(tx, batch);
    }
    tx.commit();
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

}  // namespace

std::unique_ptr<driver> make_outbox_driver(database db, int payload_bytes) {
  return std::make_unique<outbox_driver>(std::move(db), payload_bytes);
}

}  // namespace spool::bench
