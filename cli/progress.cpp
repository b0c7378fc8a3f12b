#include "progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace spool::cli {

namespace {

std::string format_elapsed(std::chrono::seconds elapsed) {
  const auto s = elapsed.count() < 0 ? 0 : elapsed.count();
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::size_t terminal_columns() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

std::string format_progress(std::string_view label, std::chrono::seconds elapsed,
                            const std::vector<progress_count>& counts,
                            std::optional<double> rate_per_second) {
  std::string out = fmt::format("{} {}:", label, format_elapsed(elapsed));
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out += fmt::format("{} {} {}", i == 0 ? "" : ",", counts[i].name, counts[i].value);
  }
  if (rate_per_second) out += fmt::format(" ({:.1f}/s)", *rate_per_second);
  return out;
}

bool progress_wanted(bool json) { return !json && ::isatty(STDERR_FILENO) == 1; }

void progress_line::show(std::string_view text) {
  if (!enabled_) return;
  // One column short of the width: writing the last column wraps on some terminals.
  const std::size_t width = terminal_columns() - 1;
  if (text.size() > width) text = text.substr(0, width);
  // \r back to column 0, then the text, then erase whatever a longer line left.
  std::fprintf(stderr, "\r%.*s\x1b[K", static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
  drawn_ = true;
}

void progress_line::clear() {
  if (!enabled_ || !drawn_) return;
  std::fputs("\r\x1b[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

progress_ticker::progress_ticker(bool enabled, std::string label,
                                 std::function<std::vector<progress_count>()> counts,
                                 std::chrono::milliseconds interval)
    : line_(enabled), label_(std::move(label)), counts_(std::move(counts)), interval_(interval) {
  if (enabled) thread_ = std::thread([this] { run(); });
}

progress_ticker::~progress_ticker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  line_.clear();
}

void progress_ticker::run() {
  const auto started = std::chrono::steady_clock::now();
  auto last_tick = started;
  std::optional<std::uint64_t> last_first;
  std::unique_lock lock(mutex_);
  // The first line is drawn at once, so a command shows its status as soon as it starts.
  do {
    lock.unlock();
    try {
      const auto counts = counts_();
      const auto now = std::chrono::steady_clock::now();
      std::optional<double> rate;
      if (!counts.empty() && last_first && counts[0].value >= *last_first) {
        const double dt = std::chrono::duration<double>(now - last_tick).count();
        if (dt > 0) rate = static_cast<double>(counts[0].value - *last_first) / dt;
      }
      if (!counts.empty()) last_first = counts[0].value;
      last_tick = now;
      line_.show(format_progress(label_, std::chrono::duration_cast<std::chrono::seconds>(now - started),
                                 counts, rate));
    } catch (const std::exception&) {
      // A failed snapshot only skips this redraw: progress never stops the command.
    }
    lock.lock();
  } while (!cv_.wait_for(lock, interval_, [this] { return stopping_; }));
}

}  // namespace spool::cli
