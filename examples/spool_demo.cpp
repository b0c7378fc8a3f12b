// spool_demo — a short end-to-end tour of spool::mq on SQLite or PostgreSQL.
//
// It migrates the schema, publishes grouped webhook messages in batches, slips
// in one poison row the way a buggy legacy producer would, consumes with a few
// threads (acking most messages, nacking some with a delay so they come back),
// and then checks what a queue user cares about: nothing lost, nothing acked
// twice, the poison row quarantined, and every group handled in publish order.
//
//   ./build/examples/spool_demo --db sqlite:spool.db
//   ./build/examples/spool_demo --db postgresql://postgres@127.0.0.1:5432/postgres --json
//
// Exit code 0 when every check passed, 1 when one failed (or on a spool::error),
// 2 on a usage error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/queue.hpp"

namespace {

using namespace std::chrono_literals;
namespace mq = spool::mq;
using steady = std::chrono::steady_clock;

constexpr auto visibility = 5s;  // long enough that no claim lapses while a worker holds it
constexpr auto nack_delay = 1s;  // visible_at has whole-second granularity, so never below 1 s
constexpr auto time_limit = 60s;
constexpr int nack_every = 7;    // every 7th message fails its first attempt
constexpr int publish_batch_size = 50;
const std::string poison_id = "legacy-poison-1";

struct settings {
  std::string db = "sqlite:spool.db";
  int messages = 200;
  int groups = 10;
  int workers = 4;
  std::string queue = "demo";
  bool json = false;
};

// What the workers observed. One mutex is plenty for a demo of a few hundred
// messages; what matters is that the checks below read a consistent picture.
struct ledger {
  ledger(int n, int g) : acks(n), acked_on(n), last_receive(n), handled(n), order(g) {}
  std::mutex mu;
  std::vector<int> acks;                    // successful acks per message
  std::vector<std::int64_t> acked_on;       // receive_count of the delivery that acked
  std::vector<std::int64_t> last_receive;   // highest receive_count seen
  std::vector<char> handled;                // handled successfully at least once
  std::vector<std::vector<int>> order;      // per group: sequence numbers in order of first handling
  long delivered = 0, redelivered = 0, nacked = 0, stale_acks = 0, errors = 0;
  std::string last_error;
};

// SQL for db.exec: written once with $n placeholders; SQLite spells them ?n.
std::string dialect(spool::engine e, std::string sql) {
  if (e == spool::engine::sqlite) std::replace(sql.begin(), sql.end(), '$', '?');
  return sql;
}

mq::message make_message(int seq, int groups) {
  mq::message m;  // id left empty: Spool assigns a UUIDv7, so ids sort in publish order (I4)
  const int g = seq % groups;
  m.pool_code = "demo";
  m.mediation_type = "HTTP";
  m.mediation_target = fmt::format("https://hooks.example.com/customers/{:02}/orders", g);
  m.message_group_id = fmt::format("customer-{:02}", g);
  m.dispatch_mode = "BLOCK_ON_ERROR";
  // An application field the queue does not know: it rides along in `extra`.
  m.extra.push_back({"seq", std::to_string(seq)});
  return m;
}

std::string plural(long n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

int seq_of(const mq::message& m) {
  for (const auto& x : m.extra) {
    if (x.key == "seq") return std::stoi(x.json);
  }
  return -1;
}

void handle(mq::queue& q, ledger& book, const mq::delivered_message& d, const settings& s) {
  const int seq = seq_of(d.body);
  const std::int64_t receive = d.receive_count.value_or(1);
  if (seq < 0 || seq >= s.messages) {  // not ours (someone else shares the queue name): leave it alone
    std::lock_guard lock(book.mu);
    ++book.errors;
    book.last_error = fmt::format("foreign message {} on queue {}", d.broker_message_id, s.queue);
    return;
  }
  const bool fail_once = seq % nack_every == 0 && receive == 1;  // a transient failure, first attempt only
  {
    std::lock_guard lock(book.mu);
    ++book.delivered;
    if (receive > 1) ++book.redelivered;
    book.last_receive[seq] = std::max(book.last_receive[seq], receive);
    // Recorded before the ack: with strict group order the group's next
    // message cannot be claimed until this ack commits, so a violation here
    // would be real and not an artefact of thread scheduling.
    if (!fail_once && !book.handled[seq]) {
      book.handled[seq] = 1;
      book.order[seq % s.groups].push_back(seq);
    }
  }
  try {
    if (fail_once) {
      const bool released = q.nack(d.receipt, nack_delay);
      std::lock_guard lock(book.mu);
      if (released) ++book.nacked;
      return;
    }
    q.ack(d.receipt);
    std::lock_guard lock(book.mu);
    ++book.acks[seq];
    book.acked_on[seq] = receive;
  } catch (const spool::error& e) {
    std::lock_guard lock(book.mu);
    // not_found: our claim lapsed and another poll took the message over; it is acked there.
    if (e.code() == spool::errc::not_found) {
      ++book.stale_acks;
    } else {
      ++book.errors;
      book.last_error = e.what();
    }
  }
}

void worker(mq::queue& q, ledger& book, const std::atomic<bool>& done, const settings& s) {
  while (!done.load()) {
    std::vector<mq::delivered_message> batch;
    try {
      // Returns at once when something is claimable; otherwise sleeps until a
      // publish or ack in this process, the poll interval, or the timeout.
      batch = q.poll_wait(8, 250ms);
    } catch (const spool::error& e) {
      {
        std::lock_guard lock(book.mu);
        ++book.errors;
        book.last_error = e.what();
      }
      std::this_thread::sleep_for(100ms);  // e.g. `unavailable` (SQLite busy): retry shortly
      continue;
    }
    for (const auto& d : batch) handle(q, book, d, s);
  }
}

int run(const settings& s) {
  auto db = spool::database::open(s.db);
  spool::migrate(db);  // the application owns this database, so it runs the DDL (ownership rule)
  for (const char* table : {"queue_messages", "queue_messages_failed"}) {  // a clean slate for our queue only
    db.exec(dialect(db.kind(), fmt::format("DELETE FROM {} WHERE queue_name = $1", table)), {s.queue});
  }

  mq::queue_options opts;
  opts.name = s.queue;
  opts.visibility_timeout = visibility;
  // Without it a group's next message may be claimed while its head is still
  // in flight (spec §5.1, T10); the demo promises per-group order, so ask for it.
  opts.strict_group_order = true;
  opts.poll_interval = 250ms;  // nacked messages come back by the clock, not by a wake-up
  mq::queue q(db, opts);

  ledger book(s.messages, s.groups);
  std::atomic<bool> done{false};
  const auto start = steady::now();
  std::vector<std::thread> pool;  // consumers first: they sleep in poll_wait until the first publish wakes them
  struct joiner {  // if publishing throws, stop and join the consumers before `q` goes away
    std::atomic<bool>& done;
    std::vector<std::thread>& threads;
    ~joiner() {
      done = true;
      for (auto& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } join_on_exit{done, pool};
  for (int i = 0; i < s.workers; ++i) pool.emplace_back(worker, std::ref(q), std::ref(book), std::cref(done), std::cref(s));

  int batches = 0;
  for (int first = 0; first < s.messages; first += publish_batch_size, ++batches) {
    std::vector<mq::message> batch;
    for (int seq = first; seq < std::min(s.messages, first + publish_batch_size); ++seq) {
      batch.push_back(make_message(seq, s.groups));
    }
    q.publish_batch(batch);
  }
  // A legacy producer writing truncated JSON straight into the table: poll
  // must quarantine it rather than deliver it or fail.
  const std::string now_sql = db.kind() == spool::engine::postgres ? "floor(extract(epoch FROM now()))::bigint" : "unixepoch()";
  db.exec(dialect(db.kind(), fmt::format("INSERT INTO queue_messages (id, queue_name, message_group_id, receipt_handle, "
                                         "visible_at, payload, created_at, receive_count) "
                                         "VALUES ($1, $2, NULL, NULL, {0}, $3, {0}, 0)",
                                         now_sql)),
          {poison_id, s.queue, std::string(R"({"id":"legacy-poison-1","mediationType":"HTTP","mediationTarget":"https://le)")});

  bool drained = false;
  while (steady::now() - start < time_limit) {
    try {
      const auto m = q.metrics();
      if (m.pending + m.in_flight + m.delayed == 0) {
        drained = true;
        break;
      }
    } catch (const spool::error& e) {
      std::lock_guard lock(book.mu);
      ++book.errors;
      book.last_error = e.what();
    }
    std::this_thread::sleep_for(100ms);
  }
  const double elapsed = std::chrono::duration<double>(steady::now() - start).count();
  done = true;
  for (auto& t : pool) t.join();  // before the checks: the ledger is final once every worker is out

  // ---- checks ----
  int acked = 0, exactly_once = 0, violations = 0;
  for (int i = 0; i < s.messages; ++i) {
    acked += book.acks[i];
    if (book.acks[i] == 1 && book.acked_on[i] == book.last_receive[i]) ++exactly_once;
  }
  for (const auto& seqs : book.order) {
    for (std::size_t i = 1; i < seqs.size(); ++i) violations += seqs[i] <= seqs[i - 1] ? 1 : 0;
  }
  const auto failed = q.failed();
  std::string poison_error;
  for (const auto& f : failed) {
    if (f.id == poison_id) poison_error = f.error_message;
  }
  const bool poison_ok = !poison_error.empty();
  const bool ok = drained && exactly_once == s.messages && violations == 0 && poison_ok;
  const double rate = elapsed > 0 ? s.messages / elapsed : 0;

  if (s.json) {
    nlohmann::ordered_json j = {
        {"db", db.display_name()}, {"queue", s.queue}, {"workers", s.workers}, {"groups", s.groups},
        {"published", s.messages}, {"poison_rows", 1}, {"delivered", book.delivered},
        {"redelivered", book.redelivered}, {"acked", acked}, {"acked_exactly_once", exactly_once},
        {"nacked", book.nacked}, {"stale_acks", book.stale_acks}, {"quarantined", failed.size()},
        {"quarantine_error", poison_error}, {"ordering_violations", violations}, {"ordering_ok", violations == 0},
        {"drained", drained}, {"errors", book.errors}, {"elapsed_s", std::round(elapsed * 1000) / 1000},
        {"msgs_per_s", std::round(rate * 10) / 10}, {"ok", ok}};
    if (book.errors > 0) j["last_error"] = book.last_error;
    fmt::print("{}\n", j.dump());
    return ok ? 0 : 1;
  }
  fmt::print("spool demo · {} · queue \"{}\"\n", db.display_name(), s.queue);
  fmt::print("  published    {} in {} ({}) + 1 poison row by plain SQL\n", plural(s.messages, "message"),
             plural(s.groups, "group"), plural(batches, "publish_batch call"));
  fmt::print("  delivered    {} ({} redelivered after {} nacks with a {} s delay)\n", book.delivered,
             book.redelivered, book.nacked, nack_delay.count());
  fmt::print("  acked        {} of {}, {} exactly once on their final delivery{}\n", acked, s.messages, exactly_once,
             book.stale_acks ? fmt::format(" ({} stale receipts)", book.stale_acks) : "");
  fmt::print("  quarantined  {}{}\n", failed.size(),
             poison_ok ? fmt::format(": {} — {}", poison_id, poison_error) : " (the poison row was NOT quarantined)");
  fmt::print("  ordering     {}\n", violations == 0 ? fmt::format("OK, each of {} handled in publish order", plural(s.groups, "group"))
                                                    : fmt::format("{} VIOLATIONS", violations));
  fmt::print("  elapsed      {:.2f} s, {:.0f} msgs/s with {}{}\n", elapsed, rate, plural(s.workers, "worker"),
             drained ? "" : fmt::format(" (gave up after {} s)", time_limit.count()));
  if (book.errors > 0) fmt::print("  errors       {} (last: {})\n", book.errors, book.last_error);
  fmt::print("{}\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  CLI::App app{"spool_demo: an end-to-end spool::mq demo (publish, poison row, consume, verify)"};
  app.add_option("--db", s.db, "database URI: sqlite:PATH or postgresql://…")->capture_default_str();
  app.add_option("--messages", s.messages, "messages to publish")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--groups", s.groups, "message groups (customers)")->capture_default_str()->check(CLI::Range(1, 10000));
  app.add_option("--workers", s.workers, "consumer threads")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--queue", s.queue, "queue name (its rows are deleted first)")->capture_default_str();
  app.add_flag("--json", s.json, "print the summary as one JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is not an error
  }

  // Spool logs through the spdlog logger named "spool"; registering our own
  // under that name before the first Spool call styles its WARN lines (the
  // quarantine) to match the summary. They go to stderr, keeping stdout for
  // the summary and its JSON form.
  auto log = spdlog::stderr_color_mt("spool");
  log->set_pattern("  [%^%l%$] %v");
  log->set_level(spdlog::level::warn);  // migration progress is noise here; warnings are not

  try {
    return run(s);
  } catch (const spool::error& e) {
    fmt::print(stderr, "spool_demo: {}/{}: {}\n", spool::to_string(e.code()), e.reason(), e.what());
    return 1;
  }
}
