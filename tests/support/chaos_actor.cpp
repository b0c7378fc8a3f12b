// spool_chaos_actor — a producer or consumer of the message queue as a process
// of its own, for the crash tests (tests/chaos/): the supervisor SIGKILLs and
// restarts it at random points. It logs what it did in the delivery-log format
// (support/delivery_log.hpp) with one write(2) per line, so what it logged
// before dying is on disk.
//
//   spool_chaos_actor produce --db URI --queue Q --name P --groups G --count N --batch B --log FILE
//     Publishes N messages "<P>-<i>" round-robin over groups "<P>-g<k>", B per
//     transaction, logging each batch after its commit. On restart it resumes
//     after the last logged message (re-publishing a batch that committed
//     unlogged is harmless: same ids, ON CONFLICT DO NOTHING). Exits 0 when done.
//   spool_chaos_actor consume --db URI --queue Q --visibility S --batch B --log FILE [--handle-ms MS]
//     Polls (strict group order), logs H, acks, logs A — until SIGTERM, then
//     finishes its batch and exits 0.
//   spool_chaos_actor enqueue --db URI --name P --count N --batch B --log FILE
//     Enqueues N ops "<P>-<i>" of type "chaos", B per transaction (the op
//     queue's consumers are real `spool ops work` processes).
//   spool_chaos_actor write --db URI --name P --keys K --count N --batch B --log FILE
//     Writes N outbox envelopes "<P>-<i>" with ordering keys "k<i % K>" (every
//     writer writes every key), B per transaction of its own (the relays are
//     real `spool relay` processes). Its P lines' seq orders a key only within
//     one writer; the suite takes the order across writers from the store.
//   For both, an id already stored means an earlier incarnation committed it
//   before a kill cut off its log line: it is left out of the insert, and
//   logged with the batch (it is in the table).
#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"
#include "support/delivery_log.hpp"

namespace {

volatile std::sig_atomic_t stop_requested = 0;
extern "C" void on_term(int) { stop_requested = 1; }

// The line the supervisor waits for before it stops a long-running actor
// gracefully: from here on SIGTERM is handled (and nothing was claimed yet).
void ready() { std::cerr << "spool_chaos_actor: ready" << std::endl; }

std::map<std::string, std::string> options(int argc, char** argv, int first) {
  std::map<std::string, std::string> o;
  for (int i = first; i + 1 < argc; i += 2) o[argv[i]] = argv[i + 1];
  return o;
}

std::string need(const std::map<std::string, std::string>& o, const std::string& k) {
  const auto it = o.find(k);
  if (it == o.end()) throw std::runtime_error("missing " + k);
  return it->second;
}

// The next message index: one past the highest this producer logged.
long resume_point(const std::string& log, const std::string& name) {
  std::ifstream in(log);
  std::string line;
  long next = 0;
  const std::string prefix = "P\t" + name + "-";
  while (std::getline(in, line)) {  // P lines only; R lines and a torn last line are skipped
    if (line.rfind(prefix, 0) != 0) continue;
    const auto end = line.find('\t', prefix.size());
    if (end == std::string::npos) continue;
    try {
      next = std::max(next, std::stol(line.substr(prefix.size(), end - prefix.size())) + 1);
    } catch (const std::exception&) {
    }
  }
  return next;
}

template <class F>
void with_retries(F&& f) {
  for (int attempt = 1;; ++attempt) {
    try {
      f();
      return;
    } catch (const spool::error& e) {
      // unavailable (busy, a server going away) and in_doubt (the commit's
      // outcome was lost with the connection): try again. in_doubt is not
      // retryable() in general, but here every retry writes the same ids,
      // and each caller handles an id an earlier attempt stored.
      if (!(e.retryable() || e.code() == spool::errc::in_doubt) || attempt > 200) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(20 * attempt, 500)));
    }
  }
}

int produce(const std::map<std::string, std::string>& o) {
  auto db = spool::database::open(need(o, "--db"));
  spool::mq::queue_options qo;
  qo.name = need(o, "--queue");
  spool::mq::queue q(db, qo);
  const std::string name = need(o, "--name"), log_file = need(o, "--log");
  const long groups = std::stol(need(o, "--groups")), count = std::stol(need(o, "--count")),
             batch = std::stol(need(o, "--batch"));
  spool::test::log_writer log(log_file);
  bool first_batch = true, repeated_attempt = false;
  for (long i = resume_point(log_file, name); i < count && !stop_requested;) {
    std::vector<spool::mq::message> msgs;
    std::vector<std::string> lines;
    for (long j = i; j < std::min(count, i + batch); ++j) {
      spool::mq::message m;
      // Zero-padded: within one created_at second a group is FIFO by id (spec §5.1).
      m.id = fmt::format("{}-{:07}", name, j);
      m.pool_code = "chaos";
      m.mediation_type = "HTTP";
      m.mediation_target = "https://chaos.example/hook";
      m.message_group_id = name + "-g" + std::to_string(j % groups);
      lines.push_back("P\t" + m.id + "\t" + *m.message_group_id + "\t" + std::to_string(j / groups));
      msgs.push_back(std::move(m));
    }
    // A batch that may repeat an earlier commit — the first of this
    // incarnation (its predecessor may have died between commit and log) or
    // one retried after an error — can re-insert messages that were already
    // consumed (dedup by id holds only while the row exists). Such re-inserts
    // are logged as R lines: a second delivery of them is the producer's.
    bool repeated = first_batch;
    first_batch = false;
    spool::mq::publish_result res;
    with_retries([&] {
      if (repeated_attempt) repeated = true;
      repeated_attempt = true;
      res = q.publish_batch(msgs);
    });
    repeated_attempt = false;
    for (const auto& l : lines) log.line(l);
    if (repeated) {
      for (std::size_t k = 0; k < res.ids.size(); ++k) {
        if (res.statuses[k] == spool::mq::publish_status::inserted) log.line("R\t" + res.ids[k]);
      }
    }
    i += static_cast<long>(msgs.size());
  }
  return 0;
}

// Runs insert (one transaction) with retries, then logs the batch: only
// what is now stored, and all of it (an item a predecessor stored before it
// was killed is produced too).
template <class Insert>
void insert_logged(Insert&& insert, spool::test::log_writer& log, const std::vector<std::string>& lines) {
  with_retries(insert);
  for (const auto& l : lines) log.line(l);
}

int enqueue(const std::map<std::string, std::string>& o) {
  auto db = spool::database::open(need(o, "--db"));
  spool::ops::queue q(db);
  const std::string name = need(o, "--name"), log_file = need(o, "--log");
  const long count = std::stol(need(o, "--count")), batch = std::stol(need(o, "--batch"));
  spool::test::log_writer log(log_file);
  for (long i = resume_point(log_file, name); i < count && !stop_requested;) {
    std::vector<spool::ops::new_op> ops;
    std::vector<std::string> lines;
    for (long j = i; j < std::min(count, i + batch); ++j) {
      spool::ops::new_op op;
      op.id = fmt::format("{}-{:07}", name, j);
      op.type = "chaos";
      op.max_attempts = 1000;  // kills cost attempts; none may fail the op
      lines.push_back("P\t" + op.id + "\t" + name + "\t" + std::to_string(j));
      ops.push_back(std::move(op));
    }
    // enqueue_batch reports ids an earlier attempt stored (already_exists)
    // per item and inserts the rest; anything else it cannot do throws.
    insert_logged(
        [&] {
          for (const auto& r : q.enqueue_batch(ops)) {
            if (r.status == spool::ops::enqueue_status::deduplicated) {
              throw std::runtime_error("op " + r.id + " deduplicated: the actor sets no dedup key");
            }
          }
        },
        log, lines);
    i += static_cast<long>(ops.size());
  }
  return 0;
}

bool stored(spool::database& db, const std::string& id) {
  const std::string sql = db.kind() == spool::engine::postgres
                              ? "SELECT 1 FROM outbox_messages WHERE id = $1"
                              : "SELECT 1 FROM outbox_messages WHERE id = ?1";
  return !db.exec(sql, {id}).empty();
}

// max(seq) of the outbox and the last value of its sequence, for a report.
std::string position_state(spool::database& db) {
  if (db.kind() != spool::engine::postgres) return "?";
  try {
    const auto r = db.exec(
        "SELECT (SELECT max(seq) FROM outbox_messages)::text || ' ' || "
        "(SELECT last_value FROM outbox_messages_seq_seq)::text");
    return r.at(0).at(0).value_or("NULL");
  } catch (const std::exception& e) {
    return e.what();
  }
}

int write_envelopes(const std::map<std::string, std::string>& o) {
  auto db = spool::database::open(need(o, "--db"));
  spool::outbox::writer_options wo;
  wo.max_batch_size = 1000;
  spool::outbox::writer w(db, wo);
  const std::string name = need(o, "--name"), log_file = need(o, "--log");
  const long keys = std::stol(need(o, "--keys")), count = std::stol(need(o, "--count")),
             batch = std::stol(need(o, "--batch"));
  spool::test::log_writer log(log_file);
  for (long i = resume_point(log_file, name); i < count && !stop_requested;) {
    std::vector<spool::outbox::envelope> envs;
    std::vector<std::string> lines;
    for (long j = i; j < std::min(count, i + batch); ++j) {
      spool::outbox::envelope e;
      e.id = fmt::format("{}-{:07}", name, j);
      e.topic = "chaos";
      e.payload = "{}";
      e.ordering_key = fmt::format("k{}", j % keys);  // shared by every writer
      lines.push_back("P\t" + e.id + "\t" + e.ordering_key + "\t" + std::to_string(j / keys));
      envs.push_back(std::move(e));
    }
    // The writer's batch is all or nothing (it runs in the caller's business
    // transaction: outbox.md §5): an id an earlier attempt stored fails it
    // with duplicate_id. The actor then leaves out what is stored and writes
    // the rest, so it logs exactly what is in the table.
    insert_logged(
        [&] {
          for (;;) {
            try {
              if (db.kind() == spool::engine::postgres) {
                spool::pg::tx tx(db);
                if (!envs.empty()) (void)w.insert_batch(tx, envs);
                tx.commit();
              } else {
                spool::sqlite::tx tx(db);
                if (!envs.empty()) (void)w.insert_batch(tx, envs);
                tx.commit();
              }
              return;
            } catch (const spool::error& e) {
              if (e.code() != spool::errc::already_exists && e.code() != spool::errc::conflict) throw;
              const auto before = envs.size();
              if (e.code() == spool::errc::already_exists) {
                std::erase_if(envs, [&](const spool::outbox::envelope& env) { return stored(db, env.id); });
              }
              // No id of the batch is stored, yet the writer left one out:
              // say so (with the position sequence, the other unique key)
              // instead of trying the same batch forever.
              if (envs.size() == before) {
                std::string ids;
                for (const auto& env : envs) ids += " " + env.id;
                throw std::runtime_error(fmt::format("{} ({}); none of{} is stored; max(seq), its sequence: {}",
                                                     e.what(), e.reason(), ids, position_state(db)));
              }
            }
          }
        },
        log, lines);
    // The whole batch is stored now, by this attempt or an earlier one whose
    // commit was in doubt; envs holds only what this attempt wrote (empty
    // when an earlier attempt stored it all), so it cannot say how far to go.
    i += static_cast<long>(lines.size());
  }
  return 0;
}

int consume(const std::map<std::string, std::string>& o) {
  auto db = spool::database::open(need(o, "--db"));
  spool::mq::queue_options qo;
  qo.name = need(o, "--queue");
  qo.visibility_timeout = std::chrono::seconds(std::stol(need(o, "--visibility")));
  qo.strict_group_order = true;
  qo.poll_interval = std::chrono::milliseconds(100);
  spool::mq::queue q(db, qo);
  const auto batch = static_cast<std::size_t>(std::stol(need(o, "--batch")));
  spool::test::log_writer log(need(o, "--log"));
  // Visibility is kept in whole seconds on both engines (a message claimed
  // at t is visible again from floor(t) + visibility), so a claim is
  // guaranteed to hold for one second less than asked.
  const std::int64_t window_ns = (std::stoll(need(o, "--visibility")) - 1) * 1'000'000'000;
  // --handle-ms: how long handling one message takes (default 0), so that a
  // consumer holds claims when a test cuts its network.
  const auto handle = std::chrono::milliseconds(o.count("--handle-ms") ? std::stol(o.at("--handle-ms")) : 0);
  ready();
  while (!stop_requested) {
    std::vector<spool::mq::delivered_message> got;
    const std::int64_t asked = spool::test::monotonic_ns();
    try {
      got = q.poll_wait(batch, std::chrono::milliseconds(300));
    } catch (const spool::error& e) {
      if (!e.retryable()) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    for (const auto& d : got) {
      log.line("H\t" + d.broker_message_id + "\t" + std::to_string(d.receive_count.value_or(0)) + "\t" +
               std::to_string(spool::test::monotonic_ns()) + "\t" + std::to_string(asked) + "\t" +
               std::to_string(window_ns));
      if (handle.count() > 0) std::this_thread::sleep_for(handle);
      bool acked = false;
      const std::int64_t ack_started = spool::test::monotonic_ns();
      for (int attempt = 1; attempt <= 20 && !acked; ++attempt) {
        try {
          q.ack(d.receipt);
          acked = true;
        } catch (const spool::error& e) {
          // not_found: the window lapsed and someone else has it (or an
          // in-doubt ack committed). Either way this delivery is not acked here.
          if (e.code() == spool::errc::not_found || !e.retryable()) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
        }
      }
      if (acked) {
        log.line("A\t" + d.broker_message_id + "\t" + std::to_string(spool::test::monotonic_ns()) + "\t" +
                 std::to_string(ack_started));
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGTERM, on_term);
  std::signal(SIGINT, on_term);
  if (argc < 2) {
    std::cerr << "usage: spool_chaos_actor produce|consume --option value ...\n";
    return 2;
  }
  try {
    const std::string mode = argv[1];
    const auto o = options(argc, argv, 2);
    if (mode == "produce") return produce(o);
    if (mode == "consume") return consume(o);
    if (mode == "enqueue") return enqueue(o);
    if (mode == "write") return write_envelopes(o);
    std::cerr << "spool_chaos_actor: unknown mode " << mode << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "spool_chaos_actor: " << e.what() << "\n";
    return 1;
  }
}
