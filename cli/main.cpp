// spool — the command-line tool: a thin layer over the public API
// (DESIGN.md, Shared contracts → CLI).
//
// Exit codes: 0 success (expected outcomes included), 1 a spool::error (one
// stderr line "spool: <errc>[/<reason>]: <message>"), 2 a usage error.
// Nothing reaches stdout unless the command succeeded.

#include <pthread.h>

#include <CLI/CLI.hpp>
#include <csignal>
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

// SIGINT and SIGTERM are blocked from main's first line until the command is
// known: a long-running command takes them with sigwait (signal_scope), also
// one sent while it was starting; any other command gets them unblocked, so
// a pending one then ends it as before.
class early_signals {
 public:
  early_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  void release() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_{};
};

int run(int argc, char** argv) {
  early_signals signals;
  spool::cli::cli_context ctx;
  const auto app = spool::cli::build_app(ctx);
  const auto code =
      spool::cli::parse_only(*app, std::vector<std::string>(argv, argv + argc), ctx, std::cout, std::cerr);
  if (!ctx.takes_signals || code) signals.release();
  if (code) return *code;

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
