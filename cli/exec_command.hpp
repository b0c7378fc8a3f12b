// Runs a shell command for one message or op: input on its stdin, extra
// environment variables, its stdout sent to our stderr (stdout carries only
// the command's own summary). Used by `spool mq work` (and `ops work`).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace spool::cli {

struct command_result {
  int exit_code = 0;          // 128 + signal when it was killed
  std::string stderr_tail;    // the last line it wrote to stderr
};

// Runs `/bin/sh -c command`. Blocks until it exits. Throws std::runtime_error
// when it cannot be started.
command_result run_command(const std::string& command, const std::string& input,
                           const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace spool::cli
