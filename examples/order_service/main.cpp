// order_service — Spool's main job: the whole pipeline on one database.
//
//   order service ─▶ outbox ─▶ relay ─▶ message queue ─▶ fulfilment ─▶ op queue ─▶ confirmations
//
// Orders and their events commit together (transactional outbox); a relay
// forwards the events into a queue grouped by customer; fulfilment consumers
// handle each customer's orders in order, some failing transiently and one
// order never (dead-lettered after three deliveries); a legacy producer's
// garbled row is quarantined; each fulfilled order enqueues a confirmation job
// that a worker pool runs. A live line shows progress on a terminal; the run
// ends with a summary that checks itself: nothing lost, nothing done twice,
// every customer's orders in order.
//
//   ./build/examples/order_service                      (sqlite:spool.db)
//   ./build/examples/order_service --db postgresql://user@host/db --json
//
// Exit code 0 when every check passed, 1 when one failed (or on a
// spool::error), 2 on a usage error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "progress.hpp"
#include "shop.hpp"
#include "spool/error.hpp"
#include "spool/mq/consumer.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
namespace mq = spool::mq;
namespace ops = spool::ops;
namespace outbox = spool::outbox;

struct stage_counts {
  long relayed = 0, consumed = 0, confirmed = 0;
};

// A legacy producer writing truncated JSON straight into the queue table:
// poll must quarantine it, never deliver it or fail.
void insert_garbled_row(spool::database& db) {
  const std::string now = db.kind() == spool::engine::postgres ? "floor(extract(epoch FROM now()))::bigint" : "unixepoch()";
  db.exec(shop::dialect(db.kind(), fmt::format("INSERT INTO queue_messages (id, queue_name, message_group_id, "
                                               "receipt_handle, visible_at, payload, created_at, receive_count) "
                                               "VALUES ($1, $2, NULL, NULL, {0}, $3, {0}, 0)",
                                               now)),
          {shop::legacy_poison_id, shop::queue_name, std::string(R"({"id":"shop-legacy-garbled-1","mediationTy)")});
}

std::int64_t scalar(spool::database& db, const std::string& sql, const std::vector<spool::param>& params = {}) {
  const auto rows = db.exec(shop::dialect(db.kind(), sql), params);
  return rows.empty() || !rows[0][0] ? 0 : std::stoll(*rows[0][0]);
}

// Done when every stage is empty. Read in pipeline order: each stage hands on
// before it finishes (the relay inserts into the queue inside its delivery
// transaction; fulfilment enqueues its job before the ack), so empty reads in
// this order mean nothing is still on its way.
bool pipeline_empty(spool::database& db, outbox::store& st, mq::queue& q, const shop::settings& s, shop::ledger& book) {
  if (book.written.load() < s.orders) return false;
  const auto b = st.backlog();
  if (b.pending + b.leased > 0) return false;
  const auto m = q.metrics();
  if (m.pending + m.in_flight + m.delayed > 0) return false;
  return scalar(db, "SELECT count(*) FROM ops_queue WHERE type = $1 AND status IN ('pending', 'running')",
                {shop::confirm_op}) == 0;
}

struct verdict {
  std::vector<std::string> failures;
  void check(bool ok, std::string what) {
    if (!ok) failures.push_back(std::move(what));
  }
};

int run(const shop::settings& s) {
  auto db = spool::database::open(s.db);
  const bool pg = db.kind() == spool::engine::postgres;
  shop::prepare_database(db);
  shop::ledger book(s);

  // ---- the runtimes ----
  outbox::writer_options wo;
  wo.config.table = shop::outbox_table;
  wo.notify = pg;  // wakes the relay at commit; on SQLite an in-process signal does
  outbox::writer writer(db, wo);

  outbox::store_options so;
  so.config.table = shop::outbox_table;
  outbox::store store(db, so);

  mq::queue_options qo;
  qo.name = shop::queue_name;
  qo.visibility_timeout = 30s;
  qo.strict_group_order = true;  // one order per customer in flight: customers see their orders in order
  qo.max_receive_count = 3;      // the fourth claim dead-letters (queue_messages_failed)
  qo.notify = pg;
  qo.poll_interval = 200ms;
  mq::queue queue(db, qo);

  ops::queue_options jo;
  jo.notify = pg;
  ops::queue jobs(db, jo);

  outbox::mq_sink_options sink_options;
  sink_options.queue = shop::queue_name;  // group = the envelope's ordering key (the customer)
  sink_options.notify = pg;
  outbox::relay_options ro;
  ro.mode = outbox::serialization::by_ordering_key;
  ro.max_in_flight = 64;  // a claim takes the head of every customer (at most one per key)
  ro.sink_concurrency = 4;  // the queue sink only prepares rows: its writes commit with the batch record
  ro.notify = pg;
  ro.poll_interval = 250ms;
  outbox::relay relay(store, outbox::make_mq_sink(db, sink_options), ro);

  mq::consumer_options co;
  co.concurrency = static_cast<std::size_t>(s.consumers);
  co.idle_wait = 500ms;
  // A failed order is redelivered at once (nack delay 0): under strict group
  // order a delayed retry holds its whole customer back, and the queue's
  // whole-second timestamps make the shortest delay a full second (1 to 2 s),
  // which bounded this job at about 70 orders/s (issue 13).
  co.max_retry_delay = 0s;
  // Each worker claims its share of the customers at once (strict order
  // keeps one order per customer in flight, so a larger claim would leave
  // the other workers idle) and acks what it handled in one statement.
  co.batch = static_cast<std::size_t>(std::max(1, s.customers / std::max(1, s.consumers)));
  mq::consumer fulfilment(queue, [&](const mq::delivered_message& d) { shop::fulfil(d, jobs, s, book); }, co);

  ops::worker_pool_options po;
  po.workers = s.followup_workers;
  // A timed-out mail server is tried again after 20-40 ms; a retried op is
  // due then, and only a poll sees it (nothing is enqueued to wake the pool).
  po.poll_interval = 50ms;
  po.retry_base = 20ms;
  po.retry_cap = 200ms;
  po.batch = 20;
  ops::worker_pool followups(jobs, po);
  followups.add_handler(shop::confirm_op,
                        [&](const ops::op& o, ops::handler_context&) { shop::send_confirmation(o, db, s, book); });

  // ---- run ----
  const auto start = steady::now();
  relay.start();
  fulfilment.start();
  followups.start();
  insert_garbled_row(db);

  shop::progress_line line(s.progress && !s.json);
  std::atomic<bool> writing_done{false};
  std::exception_ptr writing_error;
  steady::time_point written_at{};  // set before writing_done
  struct { std::int64_t envelopes = -1, messages = -1, ops = -1; } behind;  // likewise
  std::jthread producers([&] {
    try {
      shop::place_orders(db, writer, s, book);
    } catch (...) {
      writing_error = std::current_exception();
    }
    written_at = steady::now();
    try {  // what is still on its way when the last order commits
      const auto b = store.backlog();
      const auto m = queue.metrics();
      behind = {b.pending + b.leased, m.pending + m.in_flight + m.delayed,
                scalar(db, "SELECT count(*) FROM ops_queue WHERE type = $1 AND status IN ('pending', 'running')",
                       {shop::confirm_op})};
    } catch (const spool::error&) {  // busy: the summary shows no split
    }
    writing_done = true;
  });

  bool drained = false;
  while (steady::now() - start < s.time_limit) {
    if (writing_done && writing_error) break;
    try {
      if (writing_done && pipeline_empty(db, store, queue, s, book)) {
        drained = true;
        break;
      }
    } catch (const spool::error& e) {
      if (!e.retryable()) throw;  // busy: look again on the next round
    }
    if (line.enabled()) {
      const double secs = std::chrono::duration<double>(steady::now() - start).count();
      const long confirmed = book.confirmed_total();
      line.show(fmt::format("  orders {}/{} │ relayed {} │ fulfilled {} │ confirmed {} │ retries {} │ {:.0f} orders/s",
                            book.written.load(), s.orders, relay.metrics().delivered, book.fulfilled_total(), confirmed,
                            book.transient_failures.load() + book.followup_failures.load(),
                            secs > 0 ? static_cast<double>(confirmed) / secs : 0.0));
    }
    std::this_thread::sleep_for(100ms);
  }
  const double elapsed = std::chrono::duration<double>(steady::now() - start).count();
  producers.join();
  line.clear();
  relay.stop();
  fulfilment.stop();
  (void)followups.stop();
  if (writing_error) std::rethrow_exception(writing_error);

  // ---- checks: what the database holds and what the handlers saw ----
  verdict v;
  const int poison = shop::poison_number(s);
  const auto rm = relay.metrics();
  const auto cs = fulfilment.stats();
  const auto pm = followups.metrics().total();
  const auto backlog = store.backlog();
  const auto failed = queue.failed();
  const auto orders_rows = scalar(db, fmt::format("SELECT count(*) FROM {}", shop::orders_table));
  const auto confirmed_rows = scalar(db, fmt::format("SELECT count(*) FROM {} WHERE status = 'confirmed'", shop::orders_table));
  std::string poison_reason, garbled_reason;
  for (const auto& f : failed) {
    if (f.id == shop::order_at(poison, s).id) poison_reason = f.error_message;
    if (f.id == shop::legacy_poison_id) garbled_reason = f.error_message;
  }
  long lost = 0, duplicates = 0, violations = 0, expected_transient = 0, expected_flaky = 0;
  {
    std::lock_guard lock(book.mu);
    for (int n = 0; n < s.orders; ++n) {
      const auto o = shop::order_at(n, s);
      const int want = o.poison ? 0 : 1;
      const auto i = static_cast<std::size_t>(n);
      lost += std::max(0, want - book.fulfilled[i]) + std::max(0, want - book.confirmed[i]);
      duplicates += std::max(0, book.fulfilled[i] - want) + std::max(0, book.confirmed[i] - want);
      expected_transient += o.fails_once ? 1 : 0;
      expected_flaky += o.followup_flaky ? 1 : 0;
    }
    for (const auto& seqs : book.per_customer) {
      for (std::size_t i = 1; i < seqs.size(); ++i) violations += seqs[i] <= seqs[i - 1] ? 1 : 0;
    }
  }
  v.check(drained, fmt::format("the pipeline did not drain within {} s", s.time_limit.count()));
  v.check(orders_rows == s.orders, fmt::format("{} order rows, expected {}", orders_rows, s.orders));
  v.check(rm.delivered == static_cast<std::uint64_t>(s.orders),
          fmt::format("the relay delivered {} envelopes, expected {}", rm.delivered, s.orders));
  v.check(backlog.dead == 0 && backlog.pending == 0, fmt::format("outbox: {} pending, {} dead", backlog.pending, backlog.dead));
  v.check(lost == 0, fmt::format("{} orders lost on the way", lost));
  v.check(duplicates == 0, fmt::format("{} orders handled more than once", duplicates));
  v.check(violations == 0, fmt::format("{} per-customer ordering violations", violations));
  v.check(confirmed_rows == s.orders - 1, fmt::format("{} orders confirmed, expected {}", confirmed_rows, s.orders - 1));
  v.check(poison_reason.find("max receive") != std::string::npos,
          fmt::format("the poison order was not dead-lettered by the receive limit ('{}')", poison_reason));
  v.check(book.poison_attempts == qo.max_receive_count,
          fmt::format("the poison order was tried {} times, expected {}", book.poison_attempts.load(), qo.max_receive_count));
  v.check(!garbled_reason.empty(), "the garbled legacy row was not quarantined");
  v.check(failed.size() == 2, fmt::format("{} rows in queue_messages_failed, expected 2", failed.size()));
  v.check(book.transient_failures == expected_transient,
          fmt::format("{} transient fulfilment failures, expected {}", book.transient_failures.load(), expected_transient));
  v.check(book.followup_failures == expected_flaky,
          fmt::format("{} failed confirmation attempts, expected {}", book.followup_failures.load(), expected_flaky));
  v.check(book.foreign_messages == 0, fmt::format("{} foreign messages on queue {}", book.foreign_messages.load(), shop::queue_name));
  const bool ok = v.failures.empty();
  const double rate = elapsed > 0 ? s.orders / elapsed : 0;
  // What bounds the run, measured in two phases: while orders are written,
  // every stage's commits share the database's writers (on SQLite one at a
  // time, each an fsync with synchronous=FULL); after the last order, the
  // tail is the pipeline's latency, mostly retries waiting for their time
  // (on SQLite the ops table keeps whole seconds, so a retry 20 ms later
  // waits for the next second).
  const double writing_s = std::chrono::duration<double>(written_at - start).count();
  const double tail_s = std::max(0.0, elapsed - writing_s);

  if (s.json) {
    nlohmann::ordered_json j = {
        {"db", db.display_name()},
        {"orders", s.orders},
        {"customers", s.customers},
        {"written", book.written.load()},
        {"write_retries", book.write_retries.load()},
        {"relay", {{"delivered", rm.delivered}, {"retried", rm.retried}, {"dead_lettered", rm.dead_lettered}}},
        {"queue",
         {{"delivered", cs.delivered},
          {"acked", cs.acked},
          {"nacked", cs.nacked},
          {"transient_failures", book.transient_failures.load()},
          {"dead_lettered", poison_reason.empty() ? 0 : 1},
          {"dead_letter_reason", poison_reason},
          {"quarantined", garbled_reason.empty() ? 0 : 1},
          {"quarantine_reason", garbled_reason}}},
        {"followups", {{"succeeded", pm.succeeded}, {"retried", pm.retried}, {"failed", pm.failed}}},
        {"confirmed", confirmed_rows},
        {"lost", lost},
        {"duplicates", duplicates},
        {"ordering_violations", violations},
        {"ordering_ok", violations == 0},
        {"drained", drained},
        {"elapsed_s", std::round(elapsed * 1000) / 1000},
        {"orders_per_s", std::round(rate * 10) / 10},
        {"writing_s", std::round(writing_s * 1000) / 1000},
        {"tail_s", std::round(tail_s * 1000) / 1000},
        {"behind_at_last_order", {{"envelopes", behind.envelopes}, {"messages", behind.messages}, {"ops", behind.ops}}},
        {"failures", v.failures},
        {"ok", ok}};
    fmt::print("{}\n", j.dump());
    return ok ? 0 : 1;
  }
  fmt::print("spool order service · {}\n", db.display_name());
  fmt::print("  orders       {} for {} customers, each with its event in the same transaction ({} busy retries)\n",
             book.written.load(), s.customers, book.write_retries.load());
  fmt::print("  relay        {} envelopes into queue \"{}\" in customer order, {} retried, {} dead\n", rm.delivered,
             shop::queue_name, rm.retried, rm.dead_lettered);
  fmt::print("  fulfilment   {} deliveries, {} acked, {} transient failures retried\n", cs.delivered, cs.acked,
             book.transient_failures.load());
  fmt::print("  dead letter  {}\n", poison_reason.empty() ? "none (the poison order was NOT dead-lettered)"
                                                          : fmt::format("{} — {}", shop::order_at(poison, s).id, poison_reason));
  fmt::print("  quarantined  {}\n", garbled_reason.empty() ? "none (the garbled row was NOT quarantined)"
                                                           : fmt::format("{} — {}", shop::legacy_poison_id, garbled_reason));
  fmt::print("  follow-ups   {} confirmations sent, {} retried\n", pm.succeeded, pm.retried);
  fmt::print("  ordering     {}\n", violations == 0 ? fmt::format("OK, each of {} customers in order", s.customers)
                                                    : fmt::format("{} VIOLATIONS", violations));
  fmt::print("  delivery     {} lost, {} duplicates; {} of {} orders confirmed\n", lost, duplicates, confirmed_rows, s.orders);
  fmt::print("  elapsed      {:.2f} s, {:.0f} orders/s end to end\n", elapsed, rate);
  fmt::print("  bound by     writing: {} orders in {:.2f} s ({:.0f}/s), sharing {} with every stage's commits;\n",
             book.written.load(), writing_s, writing_s > 0 ? book.written.load() / writing_s : 0.0,
             pg ? "the server" : "SQLite's one writer");
  fmt::print("               then {:.2f} s for what was still on its way ({} envelopes, {} messages, {} ops){}\n",
             tail_s, behind.envelopes, behind.messages, behind.ops,
             pg ? "" : "; a retried op waits for the next whole second (SQLite's ops table keeps whole seconds)");
  for (const auto& f : v.failures) fmt::print("  CHECK FAILED {}\n", f);
  fmt::print("{}\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  shop::settings s;
  int limit = static_cast<int>(s.time_limit.count());
  bool no_progress = false;
  CLI::App app{"order_service: Spool's whole pipeline (outbox → relay → queue → consumers → op queue), self-checking"};
  app.add_option("--db", s.db, "database URI: sqlite:PATH or postgresql://…")->capture_default_str();
  app.add_option("--orders", s.orders, "orders to place")->capture_default_str()->check(CLI::Range(2, 1000000));
  app.add_option("--customers", s.customers, "customers (message groups)")->capture_default_str()->check(CLI::Range(1, 10000));
  app.add_option("--producers", s.producers, "order-service threads")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--consumers", s.consumers, "fulfilment consumer threads")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--workers", s.followup_workers, "follow-up job workers")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--time-limit", limit, "give up after this many seconds")->capture_default_str()->check(CLI::Range(1, 86400));
  app.add_flag("--no-progress", no_progress, "no live progress line (it is shown only on a terminal anyway)");
  app.add_flag("--json", s.json, "print the summary as one JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is not an error
  }
  s.time_limit = std::chrono::seconds(limit);
  s.progress = !no_progress;

  // Spool logs through the spdlog logger named "spool": warnings only, on
  // stderr, so stdout carries just the summary. The consumer logs each retry
  // at info; the run's summary counts them instead.
  auto log = spdlog::stderr_color_mt("spool");
  log->set_pattern("  [%^%l%$] %v");
  log->set_level(spdlog::level::warn);

  try {
    return run(s);
  } catch (const spool::error& e) {
    fmt::print(stderr, "order_service: {}/{}: {}\n", spool::to_string(e.code()), e.reason(), e.what());
    return 1;
  }
}
