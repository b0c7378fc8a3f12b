// Test support: what Spool logs. Spool writes to the spdlog logger named
// "spool" (src/common/log.hpp); log_capture records every line it emits, at
// every level, while the capture is alive, so a test can assert what a log
// line says (a WARN on a failed quarantine) or never says (a secret).
//
// The logger gets one tap, a dist_sink, the first time a capture is made:
// either the test registers the "spool" logger itself (stderr at WARN, as
// Spool's own, plus the tap) before Spool first logs, or it adds the tap to
// the logger Spool already made. Captures add and remove their ring buffer on
// the tap, which is thread-safe, so a capture may come and go while Spool's
// threads log. Thread safety: a log_capture may be read from any thread.
#pragma once

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spool::test {

struct log_line {
  spdlog::level::level_enum level;
  std::string text;
};

class log_capture {
 public:
  log_capture() { tap().add_sink(sink_); }
  ~log_capture() { tap().remove_sink(sink_); }
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;

  // Registers the tap now (idempotent). Calling it before Spool first logs,
  // e.g. in a fixture's SetUp, makes the logger the test's own, so no capture
  // ever has to add the tap to a logger Spool's threads may be using.
  static void install() { (void)tap(); }

  // Every line logged since construction, oldest first (the message only, no pattern).
  [[nodiscard]] std::vector<log_line> lines() const {
    std::vector<log_line> out;
    for (const auto& m : sink_->last_raw()) {
      out.push_back({m.level, std::string(m.payload.data(), m.payload.size())});
    }
    return out;
  }

  // The lines containing `needle`, for a failure message that shows them.
  [[nodiscard]] std::vector<std::string> lines_containing(std::string_view needle) const {
    std::vector<std::string> out;
    for (const auto& l : lines()) {
      if (l.text.find(needle) != std::string::npos) out.push_back(l.text);
    }
    return out;
  }

 private:
  static spdlog::sinks::dist_sink_mt& tap() {
    static const std::shared_ptr<spdlog::sinks::dist_sink_mt> sink = [] {
      auto made = std::make_shared<spdlog::sinks::dist_sink_mt>();
      auto existing = spdlog::get("spool");
      if (!existing) {
        auto to_stderr = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
        to_stderr->set_level(spdlog::level::warn);
        auto logger = std::make_shared<spdlog::logger>("spool", spdlog::sinks_init_list{to_stderr, made});
        try {
          spdlog::register_logger(logger);
          existing = logger;
        } catch (const spdlog::spdlog_ex&) {  // Spool registered its own meanwhile
          existing = spdlog::get("spool");
        }
      }
      if (existing->sinks().back() != made) {
        // Spool's own logger: keep its stderr output at WARN, let every level reach the tap.
        for (const auto& s : existing->sinks()) s->set_level(std::max(s->level(), spdlog::level::warn));
        existing->sinks().push_back(made);
      }
      existing->set_level(spdlog::level::trace);
      return made;
    }();
    return *sink;
  }

  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096);
};

}  // namespace spool::test
