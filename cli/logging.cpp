#include "logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>

namespace spool::cli {

namespace {

constexpr std::array<std::string_view, 6> levels{"trace", "debug", "info", "warn", "error", "off"};

spdlog::level::level_enum to_level(std::string_view level) {
  if (level == "trace") return spdlog::level::trace;
  if (level == "debug") return spdlog::level::debug;
  if (level == "info") return spdlog::level::info;
  if (level == "error") return spdlog::level::err;
  if (level == "off") return spdlog::level::off;
  return spdlog::level::warn;
}

}  // namespace

bool valid_log_level(std::string_view level) {
  for (auto l : levels) {
    if (l == level) return true;
  }
  return false;
}

void setup_logging(std::string_view level) {
  auto logger = spdlog::get("spool");
  // Colours only on a terminal (stderr_color_mt checks): logs piped to a
  // file or a collector stay plain text.
  if (!logger) logger = spdlog::stderr_color_mt("spool");
  // UTC with a Z and the level in full: easy to grep and to parse.
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %^%l%$ %n: %v", spdlog::pattern_time_type::utc);
  logger->set_level(to_level(level));
  // Warnings and errors reach stderr at once, even if the process is killed next.
  logger->flush_on(spdlog::level::warn);
}

spdlog::logger& log() {
  if (auto logger = spdlog::get("spool")) return *logger;
  setup_logging("warn");
  return *spdlog::get("spool");
}

}  // namespace spool::cli
