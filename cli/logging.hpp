// The CLI's logs: the library's spdlog logger "spool", created by the CLI on
// stderr with --log-level (trace|debug|info|warn|error|off, default warn) and
// one line per event: "<UTC time> <level> spool: <message>". stdout stays for
// the command's output.
#pragma once

#include <spdlog/logger.h>

#include <string_view>

namespace spool::cli {

// True for trace, debug, info, warn, error and off.
[[nodiscard]] bool valid_log_level(std::string_view level);

// Creates (or reconfigures) the "spool" logger before the library's first
// log line. Call once from main, before any command runs; level must be
// valid_log_level.
void setup_logging(std::string_view level);

// The "spool" logger, for the CLI's own events (started, stopping, stopped).
[[nodiscard]] spdlog::logger& log();

}  // namespace spool::cli
