// Spool's logger. Library logs go to the spdlog logger named "spool": an
// application that registers its own logger under that name before using
// Spool receives them; otherwise Spool creates one writing to stderr (never
// stdout, which belongs to the application and the CLI's JSON output).
#pragma once

#include <spdlog/spdlog.h>

namespace spool::detail {

spdlog::logger& log();

}  // namespace spool::detail
