// main() of the spool_<capability>_bench programs: the workloads of one
// capability (workloads.hpp), one JSON line per result on stdout as it is
// made, progress on stderr. Exit 0 when every count checked out, 1 otherwise
// or on a spool::error, 2 on a usage error.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "bench_options.hpp"
#include "spool/error.hpp"
#include "workloads.hpp"

namespace spool::bench {

inline int program_main(int argc, char** argv, const std::string& capability) {
  const std::string name = "spool_" + capability + "_bench";
  options o;
  o.capabilities = {capability};
  cli_flags f;
  CLI::App app{name + ": the named workloads of " + capability +
               " (docs/BENCHMARKS.md), one JSON line per result"};
  app.add_option("--db", o.db, "database URI (postgresql://… or sqlite:PATH); use a scratch database")
      ->required();
  add_options(app, o, f, false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is not an error
  }
  try {
    const bool ok = run(
        finish(o, f),
        [](const std::string& line) {
          std::fwrite(line.data(), 1, line.size(), stdout);
          std::fputc('\n', stdout);
          std::fflush(stdout);
        },
        [&name](const std::string& text) { fmt::print(stderr, "{}: {}\n", name, text); });
    return ok ? 0 : 1;
  } catch (const spool::error& e) {
    fmt::print(stderr, "{}: {}/{}: {}\n", name, spool::to_string(e.code()), e.reason(), e.what());
    return 1;
  }
}

}  // namespace spool::bench
