// Progress of the CLI's long commands: one status line on stderr, redrawn in
// place and cleared at the end, only when stderr is a terminal and --json is
// off (scripts and logs see nothing).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace spool::cli {

struct progress_count {
  std::string name;
  std::uint64_t value = 0;
};

// "LABEL ELAPSED: name value, name value (R/s)", e.g.
// "relay 1m05s: delivered 120, retried 3 (12.5/s)". Elapsed is whole
// seconds ("5s", "1m05s", "2h03m"); the rate has one decimal and is left out
// when absent.
[[nodiscard]] std::string format_progress(std::string_view label, std::chrono::seconds elapsed,
                                          const std::vector<progress_count>& counts,
                                          std::optional<double> rate_per_second);

// True when progress should be drawn: not --json and stderr is a terminal.
[[nodiscard]] bool progress_wanted(bool json);

// The status line. Disabled, every call does nothing.
// Thread safety: one thread at a time (progress_ticker serialises its own).
class progress_line {
 public:
  explicit progress_line(bool enabled) : enabled_(enabled) {}
  ~progress_line() { clear(); }
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

  // Redraws the line (cut to the terminal's width so it never wraps).
  void show(std::string_view text);
  // Erases the line if one is drawn.
  void clear();
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }

 private:
  bool enabled_;
  bool drawn_ = false;
};

// Redraws a progress_line every interval on a thread of its own from
// counts() (the rate is that of the first count since the previous tick);
// stops and clears the line on destruction. Disabled, it starts no thread.
class progress_ticker {
 public:
  progress_ticker(bool enabled, std::string label, std::function<std::vector<progress_count>()> counts,
                  std::chrono::milliseconds interval = std::chrono::seconds(1));
  ~progress_ticker();
  progress_ticker(const progress_ticker&) = delete;
  progress_ticker& operator=(const progress_ticker&) = delete;

 private:
  void run();

  progress_line line_;
  std::string label_;
  std::function<std::vector<progress_count>()> counts_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace spool::cli
