// Shared pieces of the `spool` command-line tool: the per-run context, duration
// and time formatting, output buffering and the one-line error format
// (DESIGN.md, Shared contracts → CLI).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "spool/database.hpp"
#include "spool/error.hpp"

namespace CLI {
class App;
}

namespace spool::cli {

// Ordered so that the documented key order (id, receipt, group, …) and the
// wire order of an embedded MQ message survive; nlohmann::json sorts keys.
using ojson = nlohmann::ordered_json;

inline constexpr std::string_view default_db_uri = "sqlite:spool.db";

// How long a /metrics scrape or /healthz of a long-running command waits for
// the database's backlog counts.
inline constexpr std::chrono::seconds backlog_budget{2};

// error(invalid_argument) with message: a flag's value the library would refuse.
[[nodiscard]] inline spool::error invalid(const std::string& message) {
  return spool::error(spool::errc::invalid_argument, message);
}

// Throws error(invalid_argument, invalid_config): a flag or a sink spec that does not make sense.
[[noreturn]] inline void usage(const std::string& message) {
  throw spool::error(spool::errc::invalid_argument, message, "invalid_config");
}

struct cli_context {
  std::string db_uri{default_db_uri};
  bool json = false;
  // --log-level: the "spool" logger's level on stderr (cli/logging.hpp).
  std::string log_level = "warn";
  // --notify (PostgreSQL wake-ups), on the commands that write work or wait for it.
  bool notify = false;
  // Everything meant for stdout. It is written only after the command
  // succeeded, so a failure never leaves a partial document on stdout.
  std::string out;
  // The chosen command, set by a CLI11 callback and run after parsing, so
  // spool::error never has to travel through CLI11's parser.
  std::function<void()> action;
  // Set by the long-running commands (mq work, ops work, relay), which take
  // SIGINT and SIGTERM themselves (signal_scope): main() keeps the two
  // blocked from its first line for them, so a stop sent while the process
  // is still starting is handled as a graceful stop instead of killing it.
  bool takes_signals = false;
};

// Parses "30", "500ms", "30s", "5m", "2h", "1d" (a bare integer is seconds).
// Throws spool::error(invalid_argument) naming flag and text otherwise
// (negative, empty, fractional, unknown suffix, overflow).
[[nodiscard]] std::chrono::milliseconds parse_duration(std::string_view text, std::string_view flag);

// parse_duration for flags whose API takes whole seconds: "1500ms" is
// rejected rather than silently rounded.
[[nodiscard]] std::chrono::seconds parse_seconds(std::string_view text, std::string_view flag);

// Unix seconds as RFC 3339 UTC with Z ("2024-05-01T12:00:00Z").
[[nodiscard]] std::string rfc3339(std::int64_t unix_seconds);

// Appends one JSON document (compact, one line) to ctx.out. Invalid UTF-8
// (raw quarantined payloads may hold any bytes) becomes U+FFFD instead of
// failing the command.
void emit_json(cli_context& ctx, const ojson& doc);
// Appends one line of human-readable output to ctx.out.
void emit_line(cli_context& ctx, std::string_view line);

// Opens --db. Validates the URI without connecting.
// Opens --db. connections > 0 raises the pool's cap (default 8) to it: a
// runtime working N things at once needs a connection for each of its
// claimers, recorders and workers.
[[nodiscard]] spool::database open_database(const cli_context& ctx, std::size_t connections = 0);

// Adds --db, --json and --log-level to a (sub)command so that its --help
// lists them. main pre-scans argv for them, so these bindings only document them.
// --notify: NOTIFY at commit (writers) / LISTEN while idle (workers, relay).
void add_notify_option(CLI::App& app, cli_context& ctx);

void add_connection_options(CLI::App& app, cli_context& ctx);

// "spool: <errc>[/<reason>]: <message>" on one line, with the password of
// db_uri never shown.
[[nodiscard]] std::string error_line(const spool::error& e, std::string_view db_uri);
// Newlines (libpq messages have several lines) folded into spaces; password
// of db_uri removed. For messages of non-spool exceptions too.
[[nodiscard]] std::string sanitize_message(std::string_view message, std::string_view db_uri);

// The command groups (cmd_migrate.cpp, cmd_mq.cpp). Each adds its
// subcommands to app; a parsed subcommand stores its work in ctx.action.
void add_migrate_command(CLI::App& app, cli_context& ctx);
void add_mq_command(CLI::App& app, cli_context& ctx);
// `outbox` (cmd_outbox.cpp): the transactional outbox's writer and administration.
void add_outbox_command(CLI::App& app, cli_context& ctx);
// `ops` (cmd_ops.cpp): the op queue.
void add_ops_command(CLI::App& app, cli_context& ctx);
// `mq work` (cmd_mq_work.cpp), added to the mq command group.
void add_mq_work_command(CLI::App& mq, cli_context& ctx);
// `ops work` (cmd_ops_work.cpp), added to the ops command group.
void add_ops_work_command(CLI::App& ops, cli_context& ctx);
// `relay` (cmd_relay.cpp): an outbox relay with a shipped sink.
void add_relay_command(CLI::App& app, cli_context& ctx);
// `bench` (cmd_bench.cpp): the benchmark workloads of docs/BENCHMARKS.md.
void add_bench_command(CLI::App& app, cli_context& ctx);
// `serve` (cmd_serve.cpp): the SQS API server.
void add_serve_command(CLI::App& app, cli_context& ctx);

}  // namespace spool::cli
