// spool — the command-line tool: a thin layer over the public API
// (DESIGN.md, Shared contracts → CLI).
//
// Exit codes: 0 success (expected outcomes included), 1 a spool::error (one
// stderr line "spool: <errc>[/<reason>]: <message>"), 2 a usage error.
// Nothing reaches stdout unless the command succeeded.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "logging.hpp"

namespace {

constexpr int exit_ok = 0;
constexpr int exit_error = 1;
constexpr int exit_usage = 2;

struct usage_error {
  std::string message;
};

// Takes --json, --db and --log-level out of argv before CLI11 sees it. The contract puts
// them "anywhere on the line", before or after any subcommand; CLI11 binds an
// option to the (sub)command it follows, so one pre-scan is simpler and more
// robust than defining and merging them at every level.
std::vector<std::string> prescan(int argc, char** argv, spool::cli::cli_context& ctx) {
  std::vector<std::string> rest{argv[0]};
  rest.reserve(static_cast<std::size_t>(argc));
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json") {
      ctx.json = true;
    } else if (arg == "--db") {
      if (i + 1 >= argc) throw usage_error{"--db requires a URI"};
      ctx.db_uri = argv[++i];
    } else if (arg.starts_with("--db=")) {
      ctx.db_uri = std::string(arg.substr(5));
    } else if (arg == "--log-level" || arg.starts_with("--log-level=")) {
      if (arg == "--log-level" && i + 1 >= argc) throw usage_error{"--log-level requires a level"};
      ctx.log_level = arg == "--log-level" ? argv[++i] : std::string(arg.substr(12));
      if (!spool::cli::valid_log_level(ctx.log_level)) {
        throw usage_error{"--log-level " + ctx.log_level +
                          ": expected trace, debug, info, warn, error or off"};
      }
    } else {
      rest.emplace_back(arg);
    }
  }
  return rest;
}

int usage_failure(std::string_view message) {
  std::cerr << "spool: usage: " << spool::cli::sanitize_message(message, {})
            << " (run with --help for usage)\n";
  return exit_usage;
}

int run(int argc, char** argv) {
  spool::cli::cli_context ctx;
  std::vector<std::string> args;
  try {
    args = prescan(argc, argv, ctx);
  } catch (const usage_error& e) {
    return usage_failure(e.message);
  }

  spool::cli::setup_logging(ctx.log_level);

  CLI::App app{"spool — durable message queues on PostgreSQL and SQLite", "spool"};
  app.require_subcommand(1);
  app.footer(
      "Every command takes --db URI, --json and --log-level LEVEL anywhere on its line.\n"
      "Exit status: 0 success, 1 a Spool error (one line on stderr: spool: <errc>[/<reason>]: <message>), "
      "2 a usage error.\n"
      "Durations: a bare integer is seconds; ms, s, m, h, d suffixes are accepted (500ms, 1d).");
  spool::cli::add_connection_options(app, ctx);
  spool::cli::add_migrate_command(app, ctx);
  spool::cli::add_mq_command(app, ctx);
  spool::cli::add_ops_command(app, ctx);
  spool::cli::add_outbox_command(app, ctx);
  spool::cli::add_relay_command(app, ctx);
  spool::cli::add_bench_command(app, ctx);

  std::vector<const char*> cargs;
  cargs.reserve(args.size());
  for (const auto& a : args) cargs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargs.size()), cargs.data());
  } catch (const CLI::ParseError& e) {
    // --help and friends are "errors" with exit code 0: print the help of
    // the selected subcommand to stdout.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    return usage_failure(e.what());
  }
  if (!ctx.action) return usage_failure("no command given");

  // The library logs to stderr (its "spool" logger), never to stdout, so the
  // one document on stdout stays clean.
  try {
    ctx.action();
  } catch (const spool::error& e) {
    std::cerr << spool::cli::error_line(e, ctx.db_uri) << '\n';
    return exit_error;
  } catch (const std::exception& e) {
    // Not a spool::error, so a bug or resource exhaustion; still one line,
    // still exit 1, still nothing on stdout.
    std::cerr << "spool: internal_error: " << spool::cli::sanitize_message(e.what(), ctx.db_uri) << '\n';
    return exit_error;
  }

  std::fwrite(ctx.out.data(), 1, ctx.out.size(), stdout);
  if (std::fflush(stdout) != 0) {
    std::cerr << "spool: cannot write to stdout\n";
    return exit_error;
  }
  return exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // Only setting up CLI11 or writing to stderr can get here.
    std::fprintf(stderr, "spool: internal_error: %s\n", e.what());
    return exit_error;
  }
}
