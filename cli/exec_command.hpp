// Runs a shell command for one message or op: input on its stdin, extra
// environment variables, its stdout sent to our stderr (stdout carries only
// the command's own summary). Used by `spool mq work` (and `ops work`).
#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

namespace spool::cli {

struct command_result {
  int exit_code = 0;          // 128 + signal when it was killed
  std::string stderr_tail;    // the last line it wrote to stderr
};

// Runs `/bin/sh -c command`. Blocks until it exits. Throws spool::error
// (unavailable, a std::runtime_error) when it cannot be started.
command_result run_command(const std::string& command, const std::string& input,
                           const std::vector<std::pair<std::string, std::string>>& env);

// The same, stoppable: once stop is requested the command's process group
// (it gets its own) receives SIGTERM, then SIGKILL after kill_grace. Used by
// `spool ops work` for shutdown cancellation (op-queue.md §7.4).
command_result run_command(const std::string& command, const std::string& input,
                           const std::vector<std::pair<std::string, std::string>>& env, const std::stop_token& stop,
                           std::chrono::milliseconds kill_grace);

}  // namespace spool::cli
