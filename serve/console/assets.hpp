// The console's static files (console/ in the source tree: HTML, CSS and
// JavaScript modules, no build step), embedded in the binary at configure
// time by cmake/embed_console.cmake, so `spool serve` needs nothing on disk
// and the browser loads nothing from the internet.
#pragma once

#include <string_view>

namespace spool::serve::console {

struct asset {
  std::string_view path;  // relative to console/, e.g. "app.js"
  std::string_view content_type;
  std::string_view body;
};

// The asset at path, or nullptr. Thread-safe (a constant table).
[[nodiscard]] const asset* find_asset(std::string_view path) noexcept;

}  // namespace spool::serve::console
