#include "app.hpp"

#include <CLI/CLI.hpp>
#include <ostream>
#include <string_view>

#include "logging.hpp"
#include "spool/version.hpp"

namespace spool::cli {

namespace {

struct usage_error {
  std::string message;
};

// Takes --json, --db and --log-level out of argv before CLI11 sees it. The contract puts
// them "anywhere on the line", before or after any subcommand; CLI11 binds an
// option to the (sub)command it follows, so one pre-scan is simpler and more
// robust than defining and merging them at every level.
std::vector<std::string> prescan(const std::vector<std::string>& argv, cli_context& ctx) {
  std::vector<std::string> rest;
  rest.reserve(argv.size());
  if (!argv.empty()) rest.push_back(argv[0]);
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json") {
      ctx.json = true;
    } else if (arg == "--db") {
      if (i + 1 >= argv.size()) throw usage_error{"--db requires a URI"};
      ctx.db_uri = argv[++i];
    } else if (arg.starts_with("--db=")) {
      ctx.db_uri = std::string(arg.substr(5));
    } else if (arg == "--log-level" || arg.starts_with("--log-level=")) {
      if (arg == "--log-level" && i + 1 >= argv.size()) throw usage_error{"--log-level requires a level"};
      ctx.log_level = arg == "--log-level" ? argv[++i] : std::string(arg.substr(12));
      if (!valid_log_level(ctx.log_level)) {
        throw usage_error{"--log-level " + ctx.log_level +
                          ": expected trace, debug, info, warn, error or off"};
      }
    } else {
      rest.emplace_back(arg);
    }
  }
  return rest;
}

int usage_failure(std::ostream& err, std::string_view message) {
  err << "spool: usage: " << sanitize_message(message, {}) << " (run with --help for usage)\n";
  return exit_usage;
}

}  // namespace

std::unique_ptr<CLI::App> build_app(cli_context& ctx) {
  auto app = std::make_unique<CLI::App>("spool — durable message queues on PostgreSQL and SQLite", "spool");
  app->require_subcommand(1);
  app->set_version_flag("--version", spool::version_line(),
                        "Print the version and the source commit, then exit");
  app->footer(
      "Every command takes --db URI, --json and --log-level LEVEL anywhere on its line.\n"
      "Exit status: 0 success, 1 a Spool error (one line on stderr: spool: <errc>[/<reason>]: <message>), "
      "2 a usage error.\n"
      "Durations: a bare integer is seconds; ms, s, m, h, d suffixes are accepted (500ms, 1d).");
  add_connection_options(*app, ctx);
  add_migrate_command(*app, ctx);
  add_mq_command(*app, ctx);
  add_ops_command(*app, ctx);
  add_outbox_command(*app, ctx);
  add_relay_command(*app, ctx);
  add_bench_command(*app, ctx);
  add_serve_command(*app, ctx);
  return app;
}

std::optional<int> parse_only(CLI::App& app, const std::vector<std::string>& argv, cli_context& ctx,
                              std::ostream& out, std::ostream& err) {
  std::vector<std::string> args;
  try {
    args = prescan(argv, ctx);
  } catch (const usage_error& e) {
    return usage_failure(err, e.message);
  }

  std::vector<const char*> cargs;
  cargs.reserve(args.size());
  for (const auto& a : args) cargs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargs.size()), cargs.data());
  } catch (const CLI::ParseError& e) {
    // --help and friends are "errors" with exit code 0: print the help of
    // the selected subcommand to out.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e, out, err);
    return usage_failure(err, e.what());
  }
  if (!ctx.action) return usage_failure(err, "no command given");
  return std::nullopt;
}

}  // namespace spool::cli
