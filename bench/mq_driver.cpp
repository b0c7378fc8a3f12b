// The mq driver of the benchmark workloads: publish / poll + ack on one
// mq::queue, steady consumers and the runtime through mq::consumer.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_driver.hpp"
#include "spool/mq/consumer.hpp"
#include "spool/mq/message.hpp"
#include "spool/mq/queue.hpp"

namespace spool::bench {
namespace {

using namespace std::chrono_literals;
namespace mq = spool::mq;

class mq_driver final : public driver {
 public:
  mq_driver(database db, int payload_bytes, int claim_concurrency)
      : driver(std::move(db)), payload_bytes_(payload_bytes), claim_concurrency_(claim_concurrency) {
    q_ = std::make_unique<mq::queue>(db_, opts(false));
    msg_ = make_message(payload_bytes_, "");
  }
  std::string capability() const override { return "mq"; }
  std::optional<std::size_t> claim_concurrency() const override { return opts(false).claim_concurrency; }
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
    clone(fmt::format(
              "INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, "
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
    handled_ = 0;
    consumer_ = std::make_unique<mq::consumer>(
        *q_, [this](const mq::delivered_message&) { handled_.fetch_add(1, std::memory_order_relaxed); }, co);
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
    if (claim_concurrency_ >= 0) o.claim_concurrency = static_cast<std::size_t>(claim_concurrency_);
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
  int claim_concurrency_;  // -1: the library's default
  std::unique_ptr<mq::queue> q_;
  std::unique_ptr<mq::queue> steady_q_;
  std::unique_ptr<mq::consumer> consumer_;
};

}  // namespace

std::unique_ptr<driver> make_mq_driver(database db, int payload_bytes, int claim_concurrency) {
  return std::make_unique<mq_driver>(std::move(db), payload_bytes, claim_concurrency);
}

}  // namespace spool::bench
