// `spool ops …`: thin wrappers over spool::ops::queue (op-queue.md §4;
// DESIGN.md, Shared contracts → CLI fixes the JSON shapes): enqueue, get,
// list, cancel, retry, stats, recover.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "common.hpp"
#include "spool/ops/queue.hpp"

namespace spool::cli {

namespace {

// Storage for every ops subcommand's flags; one subcommand runs per process.
struct ops_args {
  std::string schema;
  std::string table = "ops_queue";
  std::string id;
  std::string type;
  std::int32_t priority = 0;
  std::int32_t max_attempts = 0;
  std::string not_before;
  std::string delay;
  std::string dedup_key;
  std::string payload;
  bool return_existing = false;
  std::string status;
  std::int64_t limit = 0;
  std::int64_t offset = 0;
  bool reset_attempts = false;
  std::string older_than;
  CLI::Option* payload_opt = nullptr;
};

// Connects and checks the schema (op-queue.md §4.1).
spool::ops::queue open_queue(const cli_context& ctx, const ops_args& a) {
  spool::ops::queue_options options;
  options.schema = a.schema;
  options.table = a.table;
  options.notify = ctx.notify;
  return spool::ops::queue(open_database(ctx), options);
}

nlohmann::json read_payload(const ops_args& a) {
  std::string text;
  if (a.payload_opt->count() > 0) {
    text = a.payload;
  } else if (!::isatty(STDIN_FILENO)) {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (std::cin.bad()) throw invalid("cannot read the payload from stdin");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw invalid(fmt::format("the payload is not valid JSON: {}", e.what()));
  }
}

// The op JSON of op-queue.md §3.1, keys in filex's order.
ojson op_json(const spool::ops::op& o) {
  const nlohmann::json j = spool::ops::to_json(o);
  ojson out;
  for (const char* key : {"id", "type", "payload", "status", "priority", "attempts", "max_attempts",
                          "last_error", "enqueued_at", "started_at", "finished_at", "not_before", "dedup_key",
                          "lease_owner", "heartbeat_at", "defect"}) {
    if (auto it = j.find(key); it != j.end()) out[key] = ojson::parse(it->dump());
  }
  return out;
}

std::string opt_time(const std::optional<spool::ops::time_point>& t) {
  return t ? spool::ops::format_time(*t) : "-";
}

void print_op(cli_context& ctx, const spool::ops::op& o) {
  if (ctx.json) {
    emit_json(ctx, op_json(o));
    return;
  }
  const std::string status = o.status == spool::ops::op_status::unknown
                                 ? o.status_text
                                 : std::string(spool::ops::to_string(o.status));
  emit_line(ctx, fmt::format("id            {}", o.id));
  emit_line(ctx, fmt::format("type          {}", o.type));
  emit_line(ctx, fmt::format("status        {}", status));
  emit_line(ctx, fmt::format("priority      {}", o.priority));
  emit_line(ctx, fmt::format("attempts      {}/{}", o.attempts, o.max_attempts));
  emit_line(ctx, fmt::format("enqueued_at   {}", spool::ops::format_time(o.enqueued_at)));
  emit_line(ctx, fmt::format("started_at    {}", opt_time(o.started_at)));
  emit_line(ctx, fmt::format("finished_at   {}", opt_time(o.finished_at)));
  emit_line(ctx, fmt::format("not_before    {}", opt_time(o.not_before)));
  if (o.dedup_key) emit_line(ctx, fmt::format("dedup_key     {}", *o.dedup_key));
  if (o.lease_owner) emit_line(ctx, fmt::format("lease_owner   {}", *o.lease_owner));
  if (o.heartbeat_at) emit_line(ctx, fmt::format("heartbeat_at  {}", opt_time(o.heartbeat_at)));
  if (!o.last_error.empty()) emit_line(ctx, fmt::format("last_error    {}", o.last_error));
  if (o.defect) emit_line(ctx, fmt::format("defect        {}", *o.defect));
  emit_line(ctx, fmt::format("payload       {}",
                             o.payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

void run_enqueue(cli_context& ctx, const ops_args& a) {
  spool::ops::new_op o;
  o.id = a.id;
  o.type = a.type;
  o.priority = a.priority;
  o.max_attempts = a.max_attempts;
  o.dedup_key = a.dedup_key;
  if (!a.not_before.empty() && !a.delay.empty()) throw invalid("--not-before and --delay exclude each other");
  if (!a.not_before.empty()) o.not_before = spool::ops::parse_time(a.not_before);
  if (!a.delay.empty()) o.delay = parse_duration(a.delay, "--delay");
  auto q = open_queue(ctx, a);  // validates --db and the schema before stdin is read
  o.payload = read_payload(a);
  spool::ops::enqueue_options options;
  if (a.return_existing) options.duplicates = spool::ops::on_duplicate::return_existing;
  const auto r = q.enqueue(o, options);
  if (ctx.json) {
    emit_json(ctx, ojson{{"id", r.id}, {"created", r.created}});
  } else {
    emit_line(ctx,
              fmt::format("{} {}", r.created ? "enqueued" : "already pending with this dedup key:", r.id));
  }
}

void run_get(cli_context& ctx, const ops_args& a) { print_op(ctx, open_queue(ctx, a).get(a.id)); }

void run_list(cli_context& ctx, const ops_args& a) {
  auto q = open_queue(ctx, a);
  const auto page = q.list(a.status, a.limit, a.offset);
  if (ctx.json) {
    ojson list = ojson::array();
    for (const auto& o : page.ops) list.push_back(op_json(o));
    emit_json(ctx, ojson{{"ops", std::move(list)}, {"total", page.total}});
    return;
  }
  emit_line(ctx, fmt::format("{} op(s) match; showing {}", page.total, page.ops.size()));
  for (const auto& o : page.ops) {
    emit_line(
        ctx,
        fmt::format("{}  {:<9}  {}  priority {}  attempts {}/{}  enqueued {}", o.id,
                    o.status == spool::ops::op_status::unknown ? o.status_text
                                                               : std::string(spool::ops::to_string(o.status)),
                    o.type, o.priority, o.attempts, o.max_attempts, spool::ops::format_time(o.enqueued_at)));
  }
}

void run_cancel(cli_context& ctx, const ops_args& a) { print_op(ctx, open_queue(ctx, a).cancel(a.id)); }

void run_retry(cli_context& ctx, const ops_args& a) {
  print_op(ctx, open_queue(ctx, a).retry(a.id, a.reset_attempts));
}

void run_stats(cli_context& ctx, const ops_args& a) {
  const auto s = open_queue(ctx, a).stats();
  if (ctx.json) {
    emit_json(ctx, ojson{{"pending", s.pending},
                         {"running", s.running},
                         {"failed", s.failed},
                         {"done_24h", s.done_24h},
                         {"cancelled", s.cancelled}});
  } else {
    emit_line(ctx, fmt::format("pending {}  running {}  failed {}  done_24h {}  cancelled {}", s.pending,
                               s.running, s.failed, s.done_24h, s.cancelled));
  }
}

void run_recover(cli_context& ctx, const ops_args& a) {
  const auto older_than = parse_seconds(a.older_than, "--older-than");
  const auto n = open_queue(ctx, a).recover_orphans(older_than);
  if (ctx.json) {
    emit_json(ctx, ojson{{"recovered", n}});
  } else {
    emit_line(ctx,
              fmt::format("recovered {} running op(s) started more than {}s ago", n, older_than.count()));
  }
}

void run_repair_times(cli_context& ctx, const ops_args& a) {
  const auto n = open_queue(ctx, a).repair_times();
  if (ctx.json) {
    emit_json(ctx, ojson{{"repaired", n}});
  } else {
    emit_line(ctx, fmt::format("rewrote {} timestamp(s) as canonical UTC", n));
  }
}

// --schema, --ops-table, --db and --json: common to every ops subcommand.
CLI::App* add_leaf(CLI::App& ops, cli_context& ctx, ops_args& a, const char* name, const char* description,
                   const char* json_shape) {
  auto* sub = ops.add_subcommand(name, description);
  sub->footer(fmt::format("--json prints {}", json_shape));
  sub->add_option("--schema", a.schema, "PostgreSQL schema of the op table [default: current_schema()]");
  sub->add_option("--ops-table", a.table, "The op table (at most 41 bytes of [a-z0-9_])")
      ->capture_default_str();
  add_connection_options(*sub, ctx);
  return sub;
}

template <class Run>
void on_parsed(CLI::App* sub, cli_context& ctx, const std::shared_ptr<ops_args>& a, Run run) {
  sub->callback([&ctx, a, run] { ctx.action = [&ctx, a, run] { run(ctx, *a); }; });
}

const char* op_shape =
    "the op: "
    "{\"id\",\"type\",\"payload\",\"status\",\"priority\",\"attempts\",\"max_attempts\",\"enqueued_at\", …} "
    "(last_error, started_at, finished_at, not_before, dedup_key, lease_owner, heartbeat_at, defect when "
    "present; "
    "times RFC 3339 UTC)";

}  // namespace

void add_ops_command(CLI::App& app, cli_context& ctx) {
  auto a = std::make_shared<ops_args>();
  auto* ops = app.add_subcommand(
      "ops", "Op queue: enqueue, get, list, cancel, retry, stats, recover, repair-times, work");
  ops->require_subcommand(1);
  add_connection_options(*ops, ctx);
  const char* duration_help = "a bare integer is seconds; ms, s, m, h, d suffixes accepted";

  auto* enqueue =
      add_leaf(*ops, ctx, *a, "enqueue",
               "Enqueue one op; its payload (a JSON object) comes from --payload or stdin (empty: {})",
               "{\"id\":…,\"created\":true} (created is false with --return-existing when a pending op "
               "holds the dedup key)");
  enqueue->add_option("--type", a->type, "The op type (1-255 bytes)")->required();
  enqueue->add_option("--id", a->id, "The op id [default: 32 random hex characters]");
  enqueue->add_option("--priority", a->priority, "Higher runs first")->capture_default_str();
  enqueue->add_option("--max-attempts", a->max_attempts, "Retry budget; 0 means 3")->capture_default_str();
  auto* nb = enqueue->add_option("--not-before", a->not_before,
                                 "Earliest run time, RFC 3339 with any offset (2024-05-01T12:00:00Z)");
  auto* delay = enqueue->add_option(
      "--delay", a->delay,
      fmt::format("Earliest run time as a delay on the database clock ({})", duration_help));
  nb->excludes(delay);
  enqueue->add_option("--dedup-key", a->dedup_key, "Coalescing key: refused while a pending op holds it");
  enqueue->add_flag("--return-existing", a->return_existing,
                    "With a held dedup key, print the holder's id (created false) instead of failing");
  a->payload_opt =
      enqueue->add_option("--payload", a->payload, "The payload, a JSON object [default: stdin]");
  add_notify_option(*enqueue, ctx);
  on_parsed(enqueue, ctx, a, run_enqueue);

  auto* get = add_leaf(*ops, ctx, *a, "get", "Show one op", op_shape);
  get->add_option("id", a->id, "The op id")->required();
  on_parsed(get, ctx, a, run_get);

  auto* list = add_leaf(*ops, ctx, *a, "list", "List ops, newest first (enqueued_at, then id, descending)",
                        "{\"ops\":[…],\"total\":N} (total counts every op matching --status)");
  list->add_option("--status", a->status,
                   "Only ops in this status (pending, running, done, failed, cancelled)");
  list->add_option("--limit", a->limit, "At most this many ops (1-500; 0 means 100)")->capture_default_str();
  list->add_option("--offset", a->offset, "Skip this many ops")->capture_default_str();
  on_parsed(list, ctx, a, run_list);

  auto* cancel =
      add_leaf(*ops, ctx, *a, "cancel", "Cancel a pending op (running ops cannot be cancelled)", op_shape);
  cancel->add_option("id", a->id, "The op id")->required();
  on_parsed(cancel, ctx, a, run_cancel);

  auto* retry = add_leaf(*ops, ctx, *a, "retry", "Move a failed op back to pending", op_shape);
  retry->add_option("id", a->id, "The op id")->required();
  retry->add_flag("--reset-attempts", a->reset_attempts, "Start its retry budget again (attempts = 0)");
  on_parsed(retry, ctx, a, run_retry);

  auto* stats = add_leaf(*ops, ctx, *a, "stats", "Count ops by status (done: finished in the last 24 h)",
                         "{\"pending\":…,\"running\":…,\"failed\":…,\"done_24h\":…,\"cancelled\":…}");
  on_parsed(stats, ctx, a, run_stats);

  auto* recover =
      add_leaf(*ops, ctx, *a, "recover",
               "Requeue every running op started more than --older-than ago, heartbeats ignored. On a shared "
               "table this "
               "takes ops from live workers on other nodes, whose outcomes are then refused (lease_lost)",
               "{\"recovered\":N}");
  recover
      ->add_option("--older-than", a->older_than,
                   fmt::format("Started at least this long ago ({})", duration_help))
      ->required();
  on_parsed(recover, ctx, a, run_recover);

  auto* repair =
      add_leaf(*ops, ctx, *a, "repair-times",
               "SQLite: rewrite every stored time that is not canonical UTC text (as migration ops/3 "
               "does); PostgreSQL: nothing to do",
               "{\"repaired\":N}");
  on_parsed(repair, ctx, a, run_repair_times);

  add_ops_work_command(*ops, ctx);  // cmd_ops_work.cpp
}

}  // namespace spool::cli
