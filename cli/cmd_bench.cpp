// `spool bench`: the named benchmark workloads (W1–W4, backlog, held, runtime) of
// docs/BENCHMARKS.md, run in-process against --db through the same code as
// bench/'s programs (spool_bench_workloads). With --json, one JSON line per
// result; otherwise one readable line per result. bench/run.sh adds the
// throwaway server, the pgbench floor and the ratios.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_options.hpp"
#include "common.hpp"
#include "workloads.hpp"

namespace spool::cli {

namespace {

struct bench_args {
  spool::bench::options o;
  spool::bench::cli_flags flags;
};

// "postgres mq W3 consumer_batch=100 workers=4: 12345.6 msgs/s" (+ latency).
std::string readable(const std::string& json_line) {
  const auto j = nlohmann::json::parse(json_line);
  std::string s = fmt::format("{} {} {}", j.at("engine").get<std::string>(),
                              j.at("capability").get<std::string>(), j.at("workload").get<std::string>());
  for (const char* k : {"backlog", "producer_batch", "consumer_batch", "workers"}) {
    if (j.contains(k) && j.at(k) != 0) s += fmt::format(" {}={}", k, j.at(k).dump());
  }
  if (j.at("held_snapshot").get<bool>()) s += " held_snapshot";
  s += fmt::format(": {} msgs/s", j.at("msgs_per_s").dump());
  if (j.contains("us_per_msg")) s += fmt::format(", {} µs/msg", j.at("us_per_msg").dump());
  if (j.contains("p99_ms")) {
    s += fmt::format(", p50 {} ms, p95 {} ms, p99 {} ms", j.at("p50_ms").dump(), j.at("p95_ms").dump(),
                     j.at("p99_ms").dump());
  }
  return s;
}

void run_bench(cli_context& ctx, const bench_args& a) {
  auto o = spool::bench::finish(a.o, a.flags);
  o.db = ctx.db_uri;
  const bool ok = spool::bench::run(
      o,
      [&ctx](const std::string& line) {
        if (ctx.json) {
          ctx.out += line;
          ctx.out += '\n';
        } else {
          emit_line(ctx, readable(line));
        }
      },
      [](const std::string& text) { std::cerr << "spool bench: " << text << '\n'; });
  if (!ok) {
    throw spool::error(spool::errc::invalid_state,
                       "a benchmark workload lost or double-handled messages (details above on stderr)",
                       "bench_counts_mismatch");
  }
}

}  // namespace

void add_bench_command(CLI::App& app, cli_context& ctx) {
  auto args = std::make_shared<bench_args>();
  auto* cmd = app.add_subcommand(
      "bench",
      "run the benchmark workloads (docs/BENCHMARKS.md) against --db, a scratch database: the bench empties "
      "Spool's tables and refuses a database holding rows it did not write");
  spool::bench::add_options(*cmd, args->o, args->flags, true);
  add_connection_options(*cmd, ctx);
  cmd->callback([&ctx, args] { ctx.action = [&ctx, args] { run_bench(ctx, *args); }; });
}

}  // namespace spool::cli
