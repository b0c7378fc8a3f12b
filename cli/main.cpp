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

#include "app.hpp"
#include "common.hpp"
#include "logging.hpp"

namespace {

int run(int argc, char** argv) {
  spool::cli::cli_context ctx;
  const auto app = spool::cli::build_app(ctx);
  if (const auto code = spool::cli::parse_only(*app, std::vector<std::string>(argv, argv + argc), ctx,
                                               std::cout, std::cerr)) {
    return *code;
  }

  spool::cli::setup_logging(ctx.log_level);

  // The library logs to stderr (its "spool" logger), never to stdout, so the
  // one document on stdout stays clean.
  try {
    ctx.action();
  } catch (const spool::error& e) {
    std::cerr << spool::cli::error_line(e, ctx.db_uri) << '\n';
    return spool::cli::exit_error;
  } catch (const std::exception& e) {
    // Not a spool::error, so a bug or resource exhaustion; still one line,
    // still exit 1, still nothing on stdout.
    std::cerr << "spool: internal_error: " << spool::cli::sanitize_message(e.what(), ctx.db_uri) << '\n';
    return spool::cli::exit_error;
  }

  std::fwrite(ctx.out.data(), 1, ctx.out.size(), stdout);
  if (std::fflush(stdout) != 0) {
    std::cerr << "spool: cannot write to stdout\n";
    return spool::cli::exit_error;
  }
  return spool::cli::exit_ok;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // Only setting up CLI11 or writing to stderr can get here.
    std::fprintf(stderr, "spool: internal_error: %s\n", e.what());
    return spool::cli::exit_error;
  }
}
