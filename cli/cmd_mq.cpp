// `spool mq …`: thin wrappers over spool::mq::queue (message-queue.md §5;
// DESIGN.md, Shared contracts → CLI fixes the flags and JSON shapes).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "spool/mq/message.hpp"
#include "spool/mq/queue.hpp"

namespace spool::cli {

namespace {

using namespace std::chrono_literals;

// Storage for every mq subcommand's flags; only one subcommand runs per
// process, so they can share it.
struct mq_args {
  std::string queue;
  std::string schema;
  std::string id;
  std::string group;
  std::string delay;
  std::string file;
  std::string visibility;
  std::string receipt;
  std::size_t max = 1;
  std::size_t limit = 100;
  bool payload = false;
  std::vector<std::string> ids;  // redrive --id …
  std::string reason = "redrive";
  std::string actor;
  bool dry_run = false;
  bool all = false;
  CLI::Option* id_opt = nullptr;
  CLI::Option* group_opt = nullptr;
};

// Returned as a prvalue: a queue can be neither copied nor moved.
spool::mq::queue make_queue(const cli_context& ctx, const mq_args& a, std::chrono::seconds visibility = 0s) {
  return spool::mq::queue(
      open_database(ctx),
      {.name = a.queue, .visibility_timeout = visibility, .schema = a.schema, .notify = ctx.notify});
}

std::chrono::seconds optional_seconds(const std::string& text, std::string_view flag) {
  return text.empty() ? 0s : parse_seconds(text, flag);
}

// Non-blank input lines with their 1-based line numbers.
std::vector<std::pair<std::size_t, std::string>> read_lines(const std::string& file) {
  std::ifstream f;
  std::istream* in = &std::cin;
  if (!file.empty() && file != "-") {
    f.open(file);
    if (!f) throw invalid(fmt::format("--file: cannot open \"{}\": {}", file, std::strerror(errno)));
    in = &f;
  }
  std::vector<std::pair<std::size_t, std::string>> lines;
  std::string line;
  for (std::size_t n = 1; std::getline(*in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
    if (line.find_first_not_of(" \t\f\v") == std::string::npos) continue;
    lines.emplace_back(n, std::move(line));
  }
  if (in->bad()) throw invalid(fmt::format("--file: cannot read \"{}\"", file.empty() ? "-" : file));
  return lines;
}

ojson nullable(const std::optional<std::string>& v) { return v ? ojson(*v) : ojson(nullptr); }
ojson nullable(const std::optional<std::int64_t>& v) { return v ? ojson(*v) : ojson(nullptr); }
std::string shown(const std::optional<std::string>& v) { return v ? *v : "(none)"; }
std::string shown(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "(none)"; }

void run_publish(cli_context& ctx, const mq_args& a) {
  const auto delay = optional_seconds(a.delay, "--delay");
  auto q = make_queue(ctx, a);  // validates --db and --queue before stdin is read
  const auto lines = read_lines(a.file);
  const bool override_id = a.id_opt->count() > 0;
  if (override_id && lines.size() > 1) {
    throw invalid(fmt::format("--id sets the id of every input line, so it needs exactly one message; got {}",
                              lines.size()));
  }
  std::vector<spool::mq::message> batch;
  batch.reserve(lines.size());
  for (const auto& [number, text] : lines) {
    // The decoder is lenient (§3.2: it reads legacy rows, turning invalid
    // UTF-8 into U+FFFD); input to publish must not be altered silently, as
    // encode refuses invalid UTF-8 from code. A strict dump of the line as a
    // JSON string is the well-formedness check.
    try {
      (void)ojson(text).dump();
    } catch (const ojson::type_error&) {
      throw spool::error(spool::errc::invalid_argument,
                         fmt::format("input line {} is not valid UTF-8", number), "invalid_encoding");
    }
    auto decoded = spool::mq::decode(text);
    if (!decoded.ok())
      throw invalid(fmt::format("input line {} is not a message: {}", number, decoded.error));
    auto m = std::move(*decoded.value);
    if (override_id) m.id = a.id;
    if (a.group_opt->count() > 0) m.message_group_id = a.group;
    batch.push_back(std::move(m));
  }
  // One call: the batch is inserted by one statement, all or nothing.
  const auto result = q.publish_batch(batch, delay);
  if (ctx.json) {
    ojson inserted = ojson::array();
    for (auto s : result.statuses) inserted.push_back(s == spool::mq::publish_status::inserted);
    emit_json(ctx, ojson{{"ids", result.ids}, {"inserted", std::move(inserted)}});
    return;
  }
  for (std::size_t i = 0; i < result.ids.size(); ++i) {
    const bool ins = result.statuses[i] == spool::mq::publish_status::inserted;
    emit_line(ctx, fmt::format("{} {}", ins ? "inserted" : "already present", result.ids[i]));
  }
}

void run_poll(cli_context& ctx, const mq_args& a) {
  // 0 (the default) means 30 s, as in queue_options.
  auto q = make_queue(ctx, a, optional_seconds(a.visibility, "--visibility"));
  const auto got = q.poll(a.max);
  if (ctx.json) {
    ojson list = ojson::array();
    for (const auto& m : got) {
      list.push_back(ojson{{"id", m.broker_message_id},
                           {"receipt", m.receipt},
                           {"group", nullable(m.group)},
                           {"receive_count", nullable(m.receive_count)},
                           {"message", ojson::parse(spool::mq::encode(m.body))}});
    }
    emit_json(ctx, ojson{{"messages", std::move(list)}});
    return;
  }
  if (got.empty()) emit_line(ctx, "no messages");
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto& m = got[i];
    if (i > 0) emit_line(ctx, "");
    emit_line(ctx, fmt::format("id             {}", m.broker_message_id));
    emit_line(ctx, fmt::format("receipt        {}", m.receipt));
    emit_line(ctx, fmt::format("group          {}", shown(m.group)));
    emit_line(ctx, fmt::format("receive_count  {}", shown(m.receive_count)));
    emit_line(ctx, fmt::format("message        {}", spool::mq::encode(m.body)));
  }
}

void run_ack(cli_context& ctx, const mq_args& a) {
  auto q = make_queue(ctx, a);
  q.ack(a.receipt);
  if (ctx.json) {
    emit_json(ctx, ojson{{"acked", true}});
  } else {
    emit_line(ctx, "acked");
  }
}

// nack and defer differ only in which process counter they bump, which a
// one-shot CLI never reports; both are kept so scripts state their intent.
void run_release(cli_context& ctx, const mq_args& a, bool is_nack) {
  const auto delay = optional_seconds(a.delay, "--delay");
  auto q = make_queue(ctx, a);
  const bool matched = is_nack ? q.nack(a.receipt, delay) : q.defer(a.receipt, delay);
  if (ctx.json) {
    emit_json(ctx, ojson{{"matched", matched}});
  } else if (matched) {
    emit_line(ctx, fmt::format("released; visible again in {}s", delay.count()));
  } else {
    emit_line(ctx, "no message holds this receipt; nothing changed");
  }
}

void run_extend(cli_context& ctx, const mq_args& a) {
  const auto window = parse_seconds(a.visibility, "--visibility");
  auto q = make_queue(ctx, a);
  q.extend_visibility(a.receipt, window);
  if (ctx.json) {
    emit_json(ctx, ojson{{"extended", true}});
  } else {
    emit_line(ctx, fmt::format("extended; invisible for {}s", window.count()));
  }
}

void run_metrics(cli_context& ctx, const mq_args& a) {
  auto q = make_queue(ctx, a);
  const auto m = q.metrics();
  if (ctx.json) {
    emit_json(ctx, ojson{{"identifier", m.identifier},
                         {"pending", m.pending},
                         {"in_flight", m.in_flight},
                         {"delayed", m.delayed},
                         {"expired", m.expired}});
  } else {
    emit_line(ctx, fmt::format("pending {}  in_flight {}  delayed {}  expired {}", m.pending, m.in_flight,
                               m.delayed, m.expired));
  }
}

void run_failed(cli_context& ctx, const mq_args& a) {
  auto q = make_queue(ctx, a);
  const auto rows = q.failed(a.limit);
  if (ctx.json) {
    ojson list = ojson::array();
    for (const auto& f : rows) {
      ojson item{{"id", f.id},
                 {"group", nullable(f.group)},
                 {"error_message", f.error_message},
                 {"receive_count", nullable(f.receive_count)},
                 {"created_at", f.created_at ? ojson(rfc3339(*f.created_at)) : ojson(nullptr)},
                 {"failed_at", rfc3339(f.failed_at)}};
      // Payloads may carry tokens and secrets: shown only on request.
      if (a.payload) item["payload"] = f.payload;
      list.push_back(std::move(item));
    }
    emit_json(ctx, ojson{{"failed", std::move(list)}});
    return;
  }
  if (rows.empty()) emit_line(ctx, "no failed messages");
  for (const auto& f : rows) {
    emit_line(ctx, fmt::format("{}  group {}  receive_count {}  created_at {}  failed_at {}", f.id,
                               shown(f.group), shown(f.receive_count),
                               f.created_at ? rfc3339(*f.created_at) : "(none)", rfc3339(f.failed_at)));
    emit_line(ctx, fmt::format("  error: {}", f.error_message));
    if (a.payload) emit_line(ctx, fmt::format("  payload: {}", f.payload));
  }
}

void run_redrive(cli_context& ctx, const mq_args& a) {
  if (a.all && !a.ids.empty()) throw invalid("--all and --id exclude each other");
  auto q = make_queue(ctx, a);
  const auto r = q.redrive({.ids = a.ids, .reason = a.reason, .actor = a.actor, .dry_run = a.dry_run});
  if (ctx.json) {
    ojson doc{{"redriven", r.redriven}, {"conflicts", r.conflicts}};
    if (!r.missing.empty()) doc["missing"] = r.missing;
    if (a.dry_run) doc["dry_run"] = true;
    emit_json(ctx, doc);
    return;
  }
  const char* verb = a.dry_run ? "would redrive" : "redriven";
  emit_line(ctx,
            fmt::format("{} {}, conflicts {}{}", verb, r.redriven.size(), r.conflicts.size(),
                        r.missing.empty() ? "" : fmt::format(", not in quarantine {}", r.missing.size())));
  for (const auto& id : r.redriven) emit_line(ctx, fmt::format("  {} {}", verb, id));
  for (const auto& id : r.conflicts)
    emit_line(ctx, fmt::format("  conflict (a live row has this id) {}", id));
  for (const auto& id : r.missing) emit_line(ctx, fmt::format("  not in quarantine {}", id));
}

// CLI11 would wrap "-1" (and saturate a huge number) into a std::size_t, and
// its NonNegativeNumber check prints a 300-digit bound. Digits only, at most
// INT64_MAX (the SQL LIMIT type), with a readable message.
CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        std::int64_t n = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        const bool ok = !value.empty() && ec == std::errc{} && end == value.data() + value.size() && n >= 0;
        return ok ? std::string{} : "must be an integer from 0 to 9223372036854775807, got \"" + value + "\"";
      },
      "");
}

// --queue, --schema, --db and --json: common to every mq subcommand.
CLI::App* add_leaf(CLI::App& mq, cli_context& ctx, mq_args& a, const char* name, const char* description,
                   const char* json_shape) {
  auto* sub = mq.add_subcommand(name, description);
  sub->footer(fmt::format("--json prints {}", json_shape));
  sub->add_option("--queue", a.queue, "Queue name (queue_messages.queue_name)")->required();
  sub->add_option("--schema", a.schema, "PostgreSQL schema of the queue tables [default: current_schema()]");
  add_connection_options(*sub, ctx);
  return sub;
}

template <class Run>
void on_parsed(CLI::App* sub, cli_context& ctx, const std::shared_ptr<mq_args>& a, Run run) {
  sub->callback([&ctx, a, run] { ctx.action = [&ctx, a, run] { run(ctx, *a); }; });
}

}  // namespace

void add_mq_command(CLI::App& app, cli_context& ctx) {
  auto a = std::make_shared<mq_args>();
  auto* mq = app.add_subcommand(
      "mq", "Message queue: publish, poll, ack, nack, defer, extend, metrics, failed, redrive, work");
  mq->require_subcommand(1);
  add_connection_options(*mq, ctx);
  const char* duration_help = "a bare integer is seconds; ms, s, m, h, d suffixes accepted";

  auto* publish =
      add_leaf(*mq, ctx, *a, "publish",
               "Publish one message per line of JSON (wire format) from --file or stdin, in one batch",
               "{\"ids\":[…],\"inserted\":[true,false,…]} (inserted is false for an id already queued)");
  a->id_opt =
      publish->add_option("--id", a->id, "Set this id on the message (only with exactly one input line)");
  a->group_opt = publish->add_option("--group", a->group, "Set this message group on every input line");
  publish->add_option("--delay", a->delay,
                      fmt::format("Make the messages visible after this delay ({})", duration_help));
  publish->add_option("--file", a->file, "Read messages from this file instead of stdin (- is stdin)");
  add_notify_option(*publish, ctx);
  on_parsed(publish, ctx, a, run_publish);

  auto* poll =
      add_leaf(*mq, ctx, *a, "poll", "Claim up to --max visible messages",
               "{\"messages\":[{\"id\",\"receipt\",\"group\",\"receive_count\",\"message\":{…wire form}}]}");
  poll->add_option("--max", a->max, "Claim at most this many messages")
      ->check(non_negative_integer())
      ->capture_default_str();
  poll->add_option("--visibility", a->visibility,
                   fmt::format("Claim window; 0 means 30s [default: 30s] ({})", duration_help));
  on_parsed(poll, ctx, a, run_poll);

  auto* ack =
      add_leaf(*mq, ctx, *a, "ack", "Delete a claimed message; an unknown or stale receipt is not_found",
               "{\"acked\":true}");
  ack->add_option("--receipt", a->receipt, "Receipt handle returned by poll")->required();
  on_parsed(ack, ctx, a, run_ack);

  for (const bool is_nack : {true, false}) {
    auto* sub = add_leaf(*mq, ctx, *a, is_nack ? "nack" : "defer",
                         is_nack ? "Release a claimed message as failed; visible again after --delay"
                                 : "Release a claimed message without failure; visible again after --delay",
                         "{\"matched\":true|false} (exit 0 either way)");
    sub->add_option("--receipt", a->receipt, "Receipt handle returned by poll")->required();
    sub->add_option(
        "--delay", a->delay,
        fmt::format("Delay before the message is visible again [default: 0] ({})", duration_help));
    on_parsed(sub, ctx, a, [is_nack](cli_context& c, const mq_args& args) { run_release(c, args, is_nack); });
  }

  auto* extend =
      add_leaf(*mq, ctx, *a, "extend", "Keep a claim: make the message invisible for --visibility from now",
               "{\"extended\":true}");
  extend->add_option("--receipt", a->receipt, "Receipt handle returned by poll")->required();
  extend
      ->add_option("--visibility", a->visibility,
                   fmt::format("New claim window from now; 0 lapses the claim ({})", duration_help))
      ->required();
  on_parsed(extend, ctx, a, run_extend);

  auto* metrics =
      add_leaf(*mq, ctx, *a, "metrics", "Count pending, in-flight, delayed and expired messages",
               "{\"identifier\":\"Q\",\"pending\":…,\"in_flight\":…,\"delayed\":…,\"expired\":…}");
  on_parsed(metrics, ctx, a, run_metrics);

  auto* failed = add_leaf(*mq, ctx, *a, "failed", "List quarantined (unparseable) messages of the queue",
                          "{\"failed\":[{\"id\",\"group\",\"error_message\",\"receive_count\",\"created_at\","
                          "\"failed_at\"}]} (times RFC 3339 UTC; \"payload\" only with --payload)");
  failed->add_option("--limit", a->limit, "List at most this many rows")
      ->check(non_negative_integer())
      ->capture_default_str();
  failed->add_flag("--payload", a->payload, "Include the raw payloads (they may contain secrets)");
  on_parsed(failed, ctx, a, run_failed);

  auto* redrive = add_leaf(
      *mq, ctx, *a, "redrive",
      "Move quarantined messages back to the tail of the queue in one transaction, audited in "
      "spool_mq_redrive_log",
      "{\"redriven\":[…],\"conflicts\":[…]} (conflicts: a live row has that id; kept in quarantine)");
  redrive->add_option("--id", a->ids, "Redrive only these ids (repeatable) [default: every quarantined row]");
  redrive->add_flag("--all", a->all, "Redrive every quarantined row of the queue (the default without --id)");
  redrive->add_option("--reason", a->reason, "Why, recorded in the audit log")->capture_default_str();
  redrive->add_option("--actor", a->actor, "Who, recorded in the audit log [default: the OS user]");
  redrive->add_flag("--dry-run", a->dry_run, "List what would move and change nothing");
  on_parsed(redrive, ctx, a, run_redrive);

  add_mq_work_command(*mq, ctx);
}

}  // namespace spool::cli
