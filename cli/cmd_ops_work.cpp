// `spool ops work`: an ops::worker_pool whose handler runs a shell command per
// op (op-queue.md §7.4): the op JSON on stdin; exit 0 = done, 65 = failed
// without retry, other non-zero = failed with retry (stderr's last line is
// the error). SIGINT/SIGTERM stop it gracefully; on shutdown cancellation the
// command gets SIGTERM, then SIGKILL after --cancel-grace.
#include <fmt/format.h>
#include <fmt/ranges.h>
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
#include "spool/ops/queue.hpp"
#include "spool/ops/worker_pool.hpp"

namespace spool::cli {

namespace {

struct ops_work_args {
  std::vector<std::string> types;
  std::string schema, table = "ops_queue", exec, owner;
  int concurrency = 4;
  std::size_t batch = 1;  // --batch: ops claimed per dequeue, successes acked together
  std::string poll_interval, heartbeat_interval, lease_timeout, rescue_interval, shutdown_deadline,
      cancel_grace, retry_base;
  bool no_rescuer = false;
  std::string metrics_addr;  // --metrics-addr
};

// A scrape's database reads give up after this, so a slow database cannot pile up scrapes.

void set_duration(const std::string& text, const char* flag, std::chrono::milliseconds& out) {
  if (!text.empty()) out = parse_duration(text, flag);
}

void run_ops_work(cli_context& ctx, const ops_work_args& a) {
  signal_scope signals;
  spool::ops::queue_options qo;
  qo.schema = a.schema;
  qo.table = a.table;
  qo.notify = ctx.notify;
  // Each worker, and the pool's own calls (claims, heartbeats, rescues).
  spool::database db = open_database(ctx, static_cast<std::size_t>(a.concurrency) + 4);
  spool::ops::queue q(db, qo);  // connects and checks the schema: fail fast
  spool::ops::worker_pool_options po;
  po.workers = a.concurrency;
  po.batch = a.batch;
  po.owner = a.owner;
  po.rescuer = !a.no_rescuer;
  set_duration(a.poll_interval, "--poll-interval", po.poll_interval);
  set_duration(a.heartbeat_interval, "--heartbeat-interval", po.heartbeat_interval);
  set_duration(a.lease_timeout, "--lease-timeout", po.lease_timeout);
  set_duration(a.rescue_interval, "--rescue-interval", po.rescue_interval);
  set_duration(a.shutdown_deadline, "--shutdown-deadline", po.shutdown_deadline);
  set_duration(a.cancel_grace, "--cancel-grace", po.cancel_grace);
  set_duration(a.retry_base, "--retry-base", po.retry_base);
  const auto grace = po.cancel_grace;
  spool::ops::worker_pool pool(q, po);
  // exit 0: done; 65 (EX_DATAERR): failed for good; anything else: retried.
  const auto outcome = [](const command_result& r) {
    if (r.exit_code == 0) return;
    const std::string why = r.stderr_tail.empty() ? fmt::format("exit {}", r.exit_code) : r.stderr_tail;
    if (r.exit_code == 65) throw spool::ops::permanent_error(why);
    throw std::runtime_error(why);
  };
  for (const auto& type : a.types) {
    if (a.batch > 1) {
      // One CMD run per claimed batch of the type, one op per stdin line;
      // its exit is every op's outcome.
      pool.add_batch_handler(type, [&a, grace, outcome, type](std::span<const spool::ops::op> ops,
                                                              spool::ops::handler_context& hc) {
        std::string input;
        for (const auto& o : ops) input += spool::ops::to_json(o).dump() + "\n";
        outcome(run_command(a.exec, input,
                            {{"SPOOL_OP_TYPE", type}, {"SPOOL_OP_COUNT", std::to_string(ops.size())}},
                            hc.stop_token(), grace));
      });
      continue;
    }
    pool.add_handler(type, [&a, grace, outcome](const spool::ops::op& o, spool::ops::handler_context& hc) {
      const std::vector<std::pair<std::string, std::string>> env = {
          {"SPOOL_OP_ID", o.id},
          {"SPOOL_OP_TYPE", o.type},
          {"SPOOL_OP_ATTEMPTS", std::to_string(o.attempts)}};
      outcome(run_command(a.exec, spool::ops::to_json(o).dump() + "\n", env, hc.stop_token(), grace));
    });
  }
  // Operability: the --metrics-addr endpoint and the progress line (both stop before the summary).
  using namespace spool::prometheus;
  const auto scrape = [&] {
    text_writer w;
    write(w, pool.metrics(), {{"owner", pool.owner()}});
    write(w, db.listener(), {});
    const labels table{{"table", a.table}};
    write_backlog(w, table, [&] { write(w, q.stats(spool::call_options::within(backlog_budget)), table); });
    return w.str();
  };
  const auto health = [&](bool) {
    (void)q.stats(spool::call_options::within(backlog_budget));  // the database answers, else 503
    return health_report{true, ojson{{"status", "ok"}, {"owner", pool.owner()}}.dump()};
  };
  auto server = serve_metrics(a.metrics_addr, {.metrics = scrape, .health = health});
  auto ticker = std::make_unique<progress_ticker>(progress_wanted(ctx.json), "ops work", [&pool] {
    const auto m = pool.metrics();
    const auto t = m.total();
    return std::vector<progress_count>{{"succeeded", t.succeeded},
                                       {"failed", t.failed},
                                       {"retried", t.retried},
                                       {"in flight", static_cast<std::uint64_t>(m.in_flight)}};
  });

  pool.start();
  log().info("ops work: started, owner {}, types {}", pool.owner(), fmt::join(a.types, ","));
  const int sig = signals.wait();
  log().info("ops work: {} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  const auto report = pool.stop();
  ticker.reset();
  server.reset();
  const auto m = pool.metrics();
  const auto t = m.total();
  const char* by = sig == SIGINT ? "SIGINT" : "SIGTERM";
  if (ctx.json) {
    ojson by_type = ojson::object();
    for (const auto& [type, c] : m.by_type) {
      if (type.empty()) continue;
      by_type[type] =
          ojson{{"claimed", c.claimed},       {"succeeded", c.succeeded}, {"failed", c.failed},
                {"retried", c.retried},       {"released", c.released},   {"recovered", c.recovered},
                {"lease_lost", c.lease_lost}, {"db_errors", c.db_errors}};
    }
    emit_json(ctx, ojson{{"owner", pool.owner()},
                         {"stopped_by", by},
                         {"claimed", t.claimed},
                         {"succeeded", t.succeeded},
                         {"failed", t.failed},
                         {"retried", t.retried},
                         {"released", t.released},
                         {"recovered", t.recovered},
                         {"lease_lost", t.lease_lost},
                         {"db_errors", t.db_errors},
                         {"still_running", report.still_running},
                         {"by_type", by_type}});
  } else {
    emit_line(ctx, fmt::format("stopped by {}: claimed {}, succeeded {}, failed {}, retried {}, released {}, "
                               "recovered {}, lease lost {}, database errors {}",
                               by, t.claimed, t.succeeded, t.failed, t.retried, t.released, t.recovered,
                               t.lease_lost, t.db_errors));
    if (!report.still_running.empty()) {
      emit_line(ctx, fmt::format("still running: {}", fmt::join(report.still_running, " ")));
    }
  }
}

}  // namespace

void add_ops_work_command(CLI::App& ops, cli_context& ctx) {
  auto a = std::make_shared<ops_work_args>();
  auto* work = ops.add_subcommand("work",
                                  "Run a worker pool whose handler runs CMD for every op of the given types: "
                                  "the op JSON on stdin, SPOOL_OP_ID, "
                                  "SPOOL_OP_TYPE and SPOOL_OP_ATTEMPTS in its environment. Exit 0 = done; "
                                  "exit 65 = failed without retry; any "
                                  "other exit = failed with retry after the backoff (stderr's last line is "
                                  "the error). SIGINT/SIGTERM stop "
                                  "claiming, let running commands finish until --shutdown-deadline, then "
                                  "send them SIGTERM (SIGKILL after "
                                  "--cancel-grace), record every outcome and exit 0.");
  work->footer(
      "--json prints one summary when it stops: "
      "{\"owner\",\"stopped_by\",\"claimed\",\"succeeded\",\"failed\","
      "\"retried\",\"released\",\"recovered\",\"lease_lost\",\"db_errors\",\"still_running\",\"by_type\"}");
  work->add_option("--type", a->types, "Op type to run (repeatable; only these are claimed)")->required();
  work->add_option("--exec", a->exec, "Shell command run for each op (via /bin/sh -c)")->required();
  work->add_option("--batch", a->batch,
                   "Ops each worker claims at once (dequeue_batch); above 1, CMD runs once per claimed "
                   "batch of a type, with one op per stdin line (SPOOL_OP_COUNT, SPOOL_OP_TYPE), and its "
                   "exit is every op's outcome")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1000}))
      ->capture_default_str();
  work->add_option("--concurrency", a->concurrency, "Ops handled at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  work->add_option("--schema", a->schema, "PostgreSQL schema of the op table [default: current_schema()]");
  work->add_option("--ops-table", a->table, "The op table (at most 41 bytes of [a-z0-9_])")
      ->capture_default_str();
  work->add_option("--owner", a->owner, "lease_owner of this pool's claims [default: <host>:<pid>:<8 hex>]");
  work->add_option("--poll-interval", a->poll_interval, "Idle poll period [default: 500ms]");
  work->add_option("--heartbeat-interval", a->heartbeat_interval, "Lease refresh period [default: 10s]");
  work->add_option("--lease-timeout", a->lease_timeout,
                   "A lease without heartbeat for this long is rescued (≥ 3 × heartbeat) [default: 60s]");
  work->add_option("--rescue-interval", a->rescue_interval, "Rescuer period, ±20 % [default: 10s]");
  work->add_flag("--no-rescuer", a->no_rescuer, "Do not run the rescuer in this pool");
  work->add_option("--shutdown-deadline", a->shutdown_deadline,
                   "Graceful stop: wait this long [default: 30s]");
  work->add_option("--cancel-grace", a->cancel_grace, "Then SIGTERM, and SIGKILL after this [default: 5s]");
  work->add_option("--retry-base", a->retry_base, "First retry delay, doubling up to 1 h [default: 30s]");
  add_metrics_option(*work, a->metrics_addr);
  add_notify_option(*work, ctx);
  add_connection_options(*work, ctx);
  work->callback([&ctx, a] {
    ctx.takes_signals = true;
    ctx.action = [&ctx, a] { run_ops_work(ctx, *a); };
  });
}

}  // namespace spool::cli
