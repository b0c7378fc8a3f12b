// `spool outbox …`: thin wrappers over spool::outbox::writer and store
// (outbox.md §5, §6.3–§6.5; DESIGN.md, Shared contracts → CLI).
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common.hpp"
#include "progress.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/tx.hpp"

namespace spool::cli {

namespace {

using namespace spool::outbox;

struct outbox_args {
  std::string schema;
  std::string table = "outbox_messages";
  // write
  std::string topic, key, idempotency_key;
  // inspect
  std::string state, before, id_prefix;
  std::optional<std::string> ordering_key;  // set and empty: unordered envelopes
  std::size_t limit = 0;
  // replay
  std::vector<std::string> ids;
  std::string requested_by, reason;
  // prune / archive
  std::string older_than, to;
};

outbox_config config_of(const outbox_args& a) { return {.schema = a.schema, .table = a.table}; }

ojson time_or_null(const std::optional<time_point>& t) { return t ? ojson(format_time(*t)) : ojson(nullptr); }
ojson text_or_null(const std::optional<std::string>& s) { return s ? ojson(*s) : ojson(nullptr); }

ojson summary_json(const message_summary& m) {
  return ojson{{"id", m.id},
               {"topic", m.topic},
               {"payload_version", m.payload_version},
               {"ordering_key", m.ordering_key},
               {"idempotency_key", m.idempotency_key},
               {"state", std::string(to_string(m.state))},
               {"claim_count", m.claim_count},
               {"failure_count", m.failure_count},
               {"available_at", format_time(m.available_at)},
               {"created_at", format_time(m.created_at)},
               {"updated_at", format_time(m.updated_at)},
               {"lease_owner", text_or_null(m.lease_owner)},
               {"leased_until", time_or_null(m.leased_until)},
               {"delivered_at", time_or_null(m.delivered_at)},
               {"dead_lettered_at", time_or_null(m.dead_lettered_at)},
               {"last_error_code", text_or_null(m.last_error_code)},
               {"last_error", text_or_null(m.last_error)}};
}

void run_write(cli_context& ctx, const outbox_args& a) {
  auto db = open_database(ctx);
  envelope_params p;
  p.topic = a.topic;
  p.payload.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  p.ordering_key = a.key;
  p.idempotency_key = a.idempotency_key;
  const envelope e = envelope_builder().build(std::move(p));
  // A repeated idempotency key is reported as "skipped", not as an error.
  writer w(db, {.config = config_of(a), .on_idempotency_conflict = idempotency_policy::skip, .notify = ctx.notify});
  insert_result r;
  {
    spool::tx tx(db);
    r = w.insert(tx, e);
    tx.commit();
  }
  const std::string result = r.status == insert_status::inserted ? "inserted" : "skipped";
  if (ctx.json) {
    emit_json(ctx, ojson{{"id", r.id}, {"result", result}});
  } else {
    emit_line(ctx, fmt::format("{} {}", result, r.id));
  }
}

void run_backlog(cli_context& ctx, const outbox_args& a) {
  auto db = open_database(ctx);
  store s(db, {.config = config_of(a)});
  const auto b = s.backlog();
  const double age_s = static_cast<double>(b.oldest_pending_age.count()) / 1e6;
  if (ctx.json) {
    emit_json(ctx, ojson{{"pending", b.pending},
                         {"leased", b.leased},
                         {"expired_leases", b.expired_leases},
                         {"dead", b.dead},
                         {"oldest_pending_created_at", time_or_null(b.oldest_pending_created_at)},
                         {"oldest_pending_age_s", b.oldest_pending_created_at ? ojson(age_s) : ojson(nullptr)}});
  } else {
    emit_line(ctx, fmt::format("pending {} leased {} expired_leases {} dead {} oldest_pending_age_s {:.3f}", b.pending,
                               b.leased, b.expired_leases, b.dead, age_s));
  }
}

void run_inspect(cli_context& ctx, const outbox_args& a) {
  auto db = open_database(ctx);
  store s(db, {.config = config_of(a)});
  inspect_query q;
  if (!a.state.empty()) q.state = parse_message_state(a.state);
  if (!a.topic.empty()) q.topic = a.topic;
  if (!a.before.empty()) q.before = a.before;
  q.ordering_key = a.ordering_key;
  if (!a.id_prefix.empty()) q.id_prefix = a.id_prefix;
  if (!a.older_than.empty()) q.min_age = parse_duration(a.older_than, "--older-than");
  q.limit = a.limit == 0 ? 100 : a.limit;
  const auto page = s.inspect(q);
  if (ctx.json) {
    ojson list = ojson::array();
    for (const auto& m : page.messages) list.push_back(summary_json(m));
    emit_json(ctx, ojson{{"messages", std::move(list)}, {"next", page.next ? ojson(*page.next) : ojson(nullptr)}});
    return;
  }
  for (const auto& m : page.messages) {
    emit_line(ctx, fmt::format("{} {} {} {} claims={} failures={}", format_time(m.created_at), m.id,
                               to_string(m.state), m.topic, m.claim_count, m.failure_count));
  }
  if (page.next) emit_line(ctx, fmt::format("next: {}", *page.next));
}

void run_replay(cli_context& ctx, const outbox_args& a) {
  auto db = open_database(ctx);
  store s(db, {.config = config_of(a)});
  const auto r = s.replay({a.ids, a.requested_by, a.reason});
  if (ctx.json) {
    ojson items = ojson::array();
    for (const auto& [id, prev] : r.items) items.push_back(ojson{{"id", id}, {"previous_state", std::string(to_string(prev))}});
    emit_json(ctx, ojson{{"replay_id", r.replay_id}, {"items", std::move(items)}});
    return;
  }
  for (const auto& [id, prev] : r.items) emit_line(ctx, fmt::format("replayed {} (was {})", id, to_string(prev)));
}

message_state terminal_state(const std::string& s) {
  const auto st = parse_message_state(s);
  if (st != message_state::delivered && st != message_state::dead) {
    throw spool::error(spool::errc::invalid_argument, "--state must be delivered or dead", "invalid_message_state");
  }
  return st;
}

// The file archiver of `spool outbox archive --to FILE`: appends one JSON
// line per row, skips ids already in the file, fsyncs before success.
archiver file_archiver(const std::string& path) {
  return [path](const std::vector<archived_message>& batch, std::chrono::steady_clock::time_point,
                std::stop_token) -> archive_outcome {
    std::set<std::string> present;
    bool torn_tail = false;  // the file does not end with a newline (a crash cut its last line)
    {
      std::ifstream in(path);
      for (std::string line; std::getline(in, line);) {
        torn_tail = in.eof();
        try {
          present.insert(nlohmann::json::parse(line).at("envelope").at("id").get<std::string>());
        } catch (const std::exception&) {  // a torn last line of an earlier crash: ignored
        }
      }
    }
    std::string out = torn_tail ? "\n" : "";  // never glue a new line onto a torn one
    for (const auto& m : batch) {
      if (present.count(m.message.id) != 0) continue;
      // The envelope is embedded as its canonical JSON object.
      std::string line = "{\"envelope\":" + canonical_json(m.message);
      nlohmann::ordered_json rest{{"state", std::string(to_string(m.state))},
                                  {"terminal_at", format_time(m.terminal_at)},
                                  {"claim_count", m.message.claim_count},
                                  {"failure_count", m.message.failure_count},
                                  {"last_error_code", m.last_error_code ? nlohmann::ordered_json(*m.last_error_code) : nullptr},
                                  {"last_error", m.last_error ? nlohmann::ordered_json(*m.last_error) : nullptr}};
      const std::string tail = rest.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      line += "," + tail.substr(1) + "\n";
      out += line;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return {false, fmt::format("cannot open the archive file: {}", std::strerror(errno))};
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        const std::string why = std::strerror(errno);
        ::close(fd);
        return {false, "cannot write the archive file: " + why};
      }
      done += static_cast<std::size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (!synced) return {false, "cannot fsync the archive file"};
    return {};
  };
}

void run_prune(cli_context& ctx, const outbox_args& a, bool archive) {
  const auto state = terminal_state(a.state);
  const auto age = std::chrono::duration_cast<std::chrono::microseconds>(parse_duration(a.older_than, "--older-than"));
  auto db = open_database(ctx);
  store s(db, {.config = config_of(a)});
  const archiver arch = archive ? file_archiver(a.to) : archiver{};
  // The cutoff is fixed once, so batches do not chase a moving "now".
  std::vector<std::string> deleted;
  const std::size_t batch = s.options().max_admin_batch;
  std::optional<cutoff> cut;
  // Batches of max_admin_batch rows: a long prune shows its count on a terminal.
  progress_line progress(progress_wanted(ctx.json));
  const auto began = std::chrono::steady_clock::now();
  for (;;) {
    std::size_t want = batch;
    if (a.limit != 0) want = std::min(batch, a.limit - deleted.size());
    if (want == 0) break;
    if (!cut) cut = cutoff::older_than(age);
    std::vector<std::string> got;
    if (archive) {
      got = state == message_state::delivered ? s.archive_and_prune_delivered(*cut, want, arch)
                                              : s.archive_and_prune_dead(*cut, want, arch);
    } else {
      got = state == message_state::delivered ? s.prune_delivered(*cut, want) : s.prune_dead(*cut, want);
    }
    deleted.insert(deleted.end(), got.begin(), got.end());
    if (got.size() < want) break;
    const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began);
    progress.show(format_progress(
        archive ? "outbox archive" : "outbox prune",
        std::chrono::duration_cast<std::chrono::seconds>(elapsed), {{"deleted", deleted.size()}},
        elapsed.count() > 0 ? std::optional(deleted.size() / elapsed.count()) : std::nullopt));
  }
  progress.clear();
  if (ctx.json) {
    emit_json(ctx, ojson{{"deleted", deleted}});
  } else {
    emit_line(ctx, fmt::format("deleted {}", deleted.size()));
  }
}

void add_table_options(CLI::App& cmd, cli_context& ctx, outbox_args& a) {
  add_connection_options(cmd, ctx);
  cmd.add_option("--schema", a.schema, "PostgreSQL schema of the outbox [default: current_schema()]");
  cmd.add_option("--outbox-table", a.table, "The outbox table [default: outbox_messages]");
}

}  // namespace

void add_outbox_command(CLI::App& app, cli_context& ctx) {
  auto a = std::make_shared<outbox_args>();
  auto* group = app.add_subcommand("outbox", "The transactional outbox: write, inspect and administer envelopes");
  group->require_subcommand(1);
  add_connection_options(*group, ctx);

  auto* write = group->add_subcommand("write", "Insert one envelope (payload read verbatim from stdin) and commit");
  add_table_options(*write, ctx, *a);
  add_notify_option(*write, ctx);
  write->add_option("--topic", a->topic, "Routing topic")->required();
  write->add_option("--key", a->key, "Ordering key");
  write->add_option("--idempotency-key", a->idempotency_key, "Idempotency key");
  write->footer("--json prints {\"id\":…,\"result\":\"inserted\"|\"skipped\"}.");
  write->callback([&ctx, a] { ctx.action = [&ctx, a] { run_write(ctx, *a); }; });

  auto* backlog = group->add_subcommand("backlog", "Counts of pending, leased, expired and dead envelopes");
  add_table_options(*backlog, ctx, *a);
  backlog->callback([&ctx, a] { ctx.action = [&ctx, a] { run_backlog(ctx, *a); }; });

  auto* inspect = group->add_subcommand("inspect", "List envelopes newest first, without payload or metadata");
  add_table_options(*inspect, ctx, *a);
  inspect->add_option("--state", a->state, "pending, leased, delivered or dead");
  inspect->add_option("--topic", a->topic, "Only this topic");
  inspect->add_option("--key", a->ordering_key, "Only this ordering key (\"\" for unordered envelopes)");
  inspect->add_option("--id-prefix", a->id_prefix, "Only ids starting with these bytes (no wildcards)");
  inspect->add_option("--older-than", a->older_than,
                      "Only envelopes created at least this long ago (30, 500ms, 7d)");
  inspect->add_option("--before", a->before, "An RFC 3339 time or the previous page's cursor");
  inspect->add_option("--limit", a->limit, "Page size [default: 100]");
  inspect->callback([&ctx, a] { ctx.action = [&ctx, a] { run_inspect(ctx, *a); }; });

  auto* replay = group->add_subcommand("replay", "Make delivered or dead envelopes pending again (audited)");
  add_table_options(*replay, ctx, *a);
  replay->add_option("--id", a->ids, "Envelope id (repeatable)")->required();
  replay->add_option("--requested-by", a->requested_by, "Who asks")->required();
  replay->add_option("--reason", a->reason, "Why")->required();
  replay->callback([&ctx, a] { ctx.action = [&ctx, a] { run_replay(ctx, *a); }; });

  for (const bool archive : {false, true}) {
    auto* cmd = group->add_subcommand(archive ? "archive" : "prune",
                                      archive ? "Append aged terminal envelopes to a JSON-lines file, then delete them"
                                              : "Delete aged terminal envelopes");
    add_table_options(*cmd, ctx, *a);
    cmd->add_option("--state", a->state, "delivered or dead")->required();
    cmd->add_option("--older-than", a->older_than, "Terminal for longer than this duration (30, 500ms, 7d)")->required();
    cmd->add_option("--limit", a->limit, "At most this many rows [default: no limit]");
    if (archive) cmd->add_option("--to", a->to, "The archive file (appended; ids already there are skipped)")->required();
    cmd->callback([&ctx, a, archive] { ctx.action = [&ctx, a, archive] { run_prune(ctx, *a, archive); }; });
  }
}

}  // namespace spool::cli
