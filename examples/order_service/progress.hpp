// A live status line on stderr, redrawn in place — only when stderr is a
// terminal, so logs, pipes and CI output stay clean.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace shop {

class progress_line {
 public:
  explicit progress_line(bool wanted) : enabled_(wanted && ::isatty(STDERR_FILENO) == 1) {}
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;
  ~progress_line() { clear(); }

  [[nodiscard]] bool enabled() const noexcept { return enabled_; }

  // Replaces the line's text (carriage return, erase line, text).
  void show(const std::string& text) {
    if (!enabled_) return;
    fmt::print(stderr, "\r\x1b[2K{}", text);
    std::fflush(stderr);
    shown_ = true;
  }

  void clear() {
    if (!enabled_ || !shown_) return;
    fmt::print(stderr, "\r\x1b[2K");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

}  // namespace shop
