// Internal: runs one process from an argv (no shell) with input on its stdin,
// extra environment variables and its stdout sent to our stderr; keeps the
// head of its stderr. Stoppable and time-limited: SIGTERM to its process
// group, then SIGKILL after kill_grace. Used by the command sink (outbox.md
// §8). The CLI's exec_command starts its children through the same
// common/spawn.hpp.
// Thread safety: reentrant; each call owns its pipes and child.
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

namespace spool::detail {

struct process_spec {
  std::vector<std::string> argv;  // argv[0] searched in PATH
  std::string input;
  std::vector<std::pair<std::string, std::string>> env;
  std::optional<std::chrono::milliseconds> timeout;  // unset: none
  std::chrono::milliseconds kill_grace{5000};
  std::size_t stderr_head_bytes = 1024;
};

struct process_result {
  std::optional<int> exit_code;  // set when it exited
  std::optional<int> signal;     // set when a signal ended it
  bool timed_out = false;        // the timeout sent SIGTERM
  bool stopped = false;          // the stop token sent SIGTERM
  std::string stderr_head;       // the first stderr_head_bytes of its stderr
};

// Blocks until the process ends. Throws spool::error (unavailable, from
// common/spawn.hpp) when it cannot be started (the message names argv[0] and
// the system error), std::runtime_error for an empty argv.
process_result run_process(const process_spec& spec, const std::stop_token& stop);

}  // namespace spool::detail
