// Fuzz target: the `spool` command line (cli/app.hpp). The fuzz bytes are
// split at NUL and newline into arguments after "spool"; the command line is
// parsed into a context exactly as main() does, but the chosen command never
// runs (no database is touched). Parsing ends in --help output (exit 0), a
// one-line usage error (exit 2) or a chosen command; no exception leaves it.
// Each argument is also given to the duration parsers, which accept it or
// raise spool::error(invalid_argument).
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "app.hpp"
#include "common.hpp"
#include "fuzz_check.hpp"

using spool::errc;
using spool::fuzz::check;
using spool::fuzz::check_error;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> argv{"spool"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      argv.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (size > 0) argv.push_back(std::move(current));
  if (argv.size() > 64) return 0;

  spool::cli::cli_context ctx;
  std::ostringstream out, err;
  try {
    const auto app = spool::cli::build_app(ctx);
    const auto code = spool::cli::parse_only(*app, argv, ctx, out, err);
    if (code) {
      check(*code == spool::cli::exit_ok || *code == spool::cli::exit_usage,
            "parse ended with an unexpected code");
      if (*code == spool::cli::exit_usage) {
        const std::string e = err.str();
        check(e.starts_with("spool: usage: ") && e.find('\n') == e.size() - 1, "usage error is not one line");
        check(out.str().empty(), "a usage error wrote to stdout");
      }
    } else {
      check(static_cast<bool>(ctx.action), "parse chose no command but did not end");
    }
  } catch (const spool::error& e) {
    spool::fuzz::fail("spool::error escaped parsing (commands must raise it when run, not parsed)");
  }

  for (std::size_t i = 1; i < argv.size(); ++i) {
    try {
      const auto d = spool::cli::parse_duration(argv[i], "--timeout");
      check(d.count() >= 0, "a negative duration parsed");
    } catch (const spool::error& e) {
      check_error(e, errc::invalid_argument);
    }
    try {
      const auto s = spool::cli::parse_seconds(argv[i], "--delay");
      check(s.count() >= 0, "negative seconds parsed");
    } catch (const spool::error& e) {
      check_error(e, errc::invalid_argument);
    }
  }
  return 0;
}
