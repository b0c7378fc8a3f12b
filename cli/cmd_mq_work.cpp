// `spool mq work`: an mq::consumer whose handler runs a shell command per
// message (message-queue.md §5.9). SIGINT/SIGTERM stop it gracefully.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <span>
#include <stdexcept>

#include "common.hpp"
#include "exec_command.hpp"
#include "logging.hpp"
#include "metrics_server.hpp"
#include "progress.hpp"
#include "signal_scope.hpp"
#include "spool/mq/consumer.hpp"
#include "spool/mq/queue.hpp"

namespace spool::cli {

namespace {

struct work_args {
  std::string queue, schema, exec, visibility;
  std::size_t concurrency = 4;
  std::size_t batch = 1;            // --batch: messages per claim and per CMD run
  bool strict_group_order = false;  // --strict-group-order (message-queue.md §7.1)
  std::string metrics_addr;         // --metrics-addr
};

// A scrape's database reads give up after this, so a slow database cannot pile up scrapes.

void run_work(cli_context& ctx, const work_args& a) {
  signal_scope signals;
  const auto visibility =
      a.visibility.empty() ? std::chrono::seconds(30) : parse_seconds(a.visibility, "--visibility");
  const spool::database db =
      open_database(ctx, a.concurrency + 4);  // each worker, and the consumer's own calls
  spool::mq::queue q(db, {.name = a.queue,
                          .visibility_timeout = visibility,
                          .schema = a.schema,
                          .strict_group_order = a.strict_group_order,
                          .notify = ctx.notify});
  (void)q.metrics();  // fail fast (missing tables, unreachable) before starting workers
  const spool::mq::consumer_options options{.concurrency = a.concurrency, .batch = a.batch};
  const auto one = [&a](const spool::mq::delivered_message& d) {
    std::vector<std::pair<std::string, std::string>> env = {
        {"SPOOL_MQ_ID", d.broker_message_id},
        {"SPOOL_MQ_RECEIVE_COUNT", d.receive_count ? std::to_string(*d.receive_count) : ""}};
    if (d.group) env.emplace_back("SPOOL_MQ_GROUP", *d.group);
    const auto r = run_command(a.exec, spool::mq::encode(d.body) + "\n", env);
    if (r.exit_code != 0) throw std::runtime_error(fmt::format("exit {}: {}", r.exit_code, r.stderr_tail));
  };
  // --batch N > 1: one CMD run per claimed batch, one message per stdin line;
  // exit 0 acks them all, any other exit nacks them all.
  const auto many = [&a](std::span<const spool::mq::delivered_message> got) {
    std::string input;
    for (const auto& d : got) input += spool::mq::encode(d.body) + "\n";
    const auto r = run_command(a.exec, input, {{"SPOOL_MQ_COUNT", std::to_string(got.size())}});
    if (r.exit_code != 0) throw std::runtime_error(fmt::format("exit {}: {}", r.exit_code, r.stderr_tail));
  };
  spool::mq::consumer c = a.batch > 1 ? spool::mq::consumer(q, spool::mq::batch_handler(many), options)
                                      : spool::mq::consumer(q, spool::mq::message_handler(one), options);
  // Operability: the --metrics-addr endpoint and the progress line (both stop before the summary).
  using namespace spool::prometheus;
  const labels queue_label{{"queue", a.queue}};
  const auto scrape = [&] {
    text_writer w;
    write(w, c.metrics(), queue_label);
    write(w, db.listener(), {});
    write_backlog(w, queue_label,
                  [&] { write(w, q.metrics(spool::call_options::within(backlog_budget)), queue_label); });
    return w.str();
  };
  const auto health = [&](bool) {
    const bool ok = q.healthy();
    return health_report{ok,
                         ojson{{"status", ok ? "ok" : "database unreachable"}, {"queue", a.queue}}.dump()};
  };
  auto server = serve_metrics(a.metrics_addr, {.metrics = scrape, .health = health});
  auto ticker = std::make_unique<progress_ticker>(progress_wanted(ctx.json), "mq work", [&c] {
    const auto m = c.metrics();
    return std::vector<progress_count>{{"acked", m.acked},
                                       {"nacked", m.nacked},
                                       {"quarantined", m.quarantined},
                                       {"in flight", static_cast<std::uint64_t>(m.in_flight)}};
  });

  c.start();
  log().info("mq work: started on queue {} with {} workers", a.queue, a.concurrency);
  const int sig = signals.wait();
  log().info("mq work: {} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  c.stop();
  ticker.reset();
  server.reset();
  const auto s = c.stats();
  if (ctx.json) {
    emit_json(ctx, ojson{{"queue", a.queue},
                         {"stopped_by", sig == SIGINT ? "SIGINT" : "SIGTERM"},
                         {"delivered", s.delivered},
                         {"acked", s.acked},
                         {"nacked", s.nacked},
                         {"outcome_errors", s.outcome_errors},
                         {"poll_errors", s.poll_errors}});
  } else {
    emit_line(ctx, fmt::format("stopped by {}: delivered {}, acked {}, nacked {}, outcome errors {}",
                               sig == SIGINT ? "SIGINT" : "SIGTERM", s.delivered, s.acked, s.nacked,
                               s.outcome_errors));
  }
}

}  // namespace

void add_mq_work_command(CLI::App& mq, cli_context& ctx) {
  auto a = std::make_shared<work_args>();
  auto* work = mq.add_subcommand(
      "work",
      "Run CMD for every message: its wire JSON on stdin, SPOOL_MQ_ID, SPOOL_MQ_RECEIVE_COUNT and "
      "SPOOL_MQ_GROUP "
      "in its environment. Exit 0 acks; any other exit nacks with delay min(15 min, 2^(receive_count-1) s) "
      "±20 %. "
      "The claim is extended every visibility/3 while CMD runs. SIGINT/SIGTERM stop polling, let running "
      "commands finish, record their outcomes and exit 0.");
  work->footer(
      "--json prints one summary when it stops: {\"queue\",\"stopped_by\",\"delivered\",\"acked\",\"nacked\","
      "\"outcome_errors\",\"poll_errors\"}");
  work->add_option("--queue", a->queue, "Queue name (queue_messages.queue_name)")->required();
  work->add_option("--schema", a->schema,
                   "PostgreSQL schema of the queue tables [default: current_schema()]");
  work->add_option("--exec", a->exec, "Shell command run for each message (via /bin/sh -c)")->required();
  work->add_option("--concurrency", a->concurrency, "Messages handled at once")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1024}))
      ->capture_default_str();
  work->add_option("--batch", a->batch,
                   "Messages each worker claims at once; above 1, CMD runs once per claimed batch with one "
                   "message per stdin line and SPOOL_MQ_COUNT set, and its exit acks or nacks them all")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}))
      ->capture_default_str();
  work->add_option("--visibility", a->visibility, "Claim window [default: 30s] (a bare integer is seconds)");
  work->add_flag("--strict-group-order", a->strict_group_order,
                 "Hand out a group's next message only once the one before is acked or its claim lapsed "
                 "(SQS FIFO): a group's messages run one at a time, in order, across every worker using it");
  add_metrics_option(*work, a->metrics_addr);
  add_notify_option(*work, ctx);
  add_connection_options(*work, ctx);
  work->callback([&ctx, a] {
    ctx.takes_signals = true;
    ctx.action = [&ctx, a] { run_work(ctx, *a); };
  });
}

}  // namespace spool::cli
