#include "common/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace spool::detail {

spdlog::logger& log() {
  // Looked up once: spdlog's registry is process-wide by design.
  static const std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("spool")) return existing;
    try {
      auto created = spdlog::stderr_color_mt("spool");
      created->set_level(spdlog::level::warn);
      return created;
    } catch (const spdlog::spdlog_ex&) {  // registered concurrently by someone else
      return spdlog::get("spool");
    }
  }();
  return *logger;
}

}  // namespace spool::detail
