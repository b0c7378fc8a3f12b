// The command line of the `spool` tool, parsed without running anything:
// main() runs what it chose, the fuzz target (fuzz/cli_args.cpp) only parses.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace spool::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_error = 1;
inline constexpr int exit_usage = 2;

// The CLI11 application with every command group, bound to ctx (which must
// outlive it: options write into ctx and the chosen command's state).
[[nodiscard]] std::unique_ptr<CLI::App> build_app(cli_context& ctx);

// Parses argv (argv[0] is the program name) into ctx: --db and --json are
// taken out anywhere on the line, the rest goes to CLI11. Returns the exit
// code when the run ends here (--help printed to out: 0; a usage error
// reported on err: 2), or nullopt when ctx.action holds the command to run.
// Runs nothing and touches no database. Errors: whatever CLI11 raises while
// building (not a ParseError), and std::bad_alloc.
[[nodiscard]] std::optional<int> parse_only(CLI::App& app, const std::vector<std::string>& argv,
                                            cli_context& ctx, std::ostream& out, std::ostream& err);

}  // namespace spool::cli
