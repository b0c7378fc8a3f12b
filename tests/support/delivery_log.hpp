// The delivery-log checker: reads what producers wrote and what consumers saw
// (one log file per process, appended across restarts) and reports lost
// messages, duplicates — explained when all but one delivery of the id ended
// without an ack (its consumer died, its ack failed, or its window lapsed);
// an id acked twice is a double claim — and per-group order violations.
//
// Log lines (tab-separated, one write() each so a SIGKILL leaves whole lines;
// a torn last line is ignored):
//   P <id> <group> <seq>           producer: <id> committed (the call returned)
//   H <id> <receive_count> <ns>    consumer: handling <id> (CLOCK_MONOTONIC ns, shared by processes)
//   A <id> <ns>                    consumer: the ack of the preceding H of <id> returned success
//   R <id>                         producer: a repeated publish (after a restart or an error)
//                                  inserted <id> anew, possibly after it had been consumed
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace spool::test {

struct produced_record {
  std::string id, group;
  std::int64_t seq = 0;  // position within the group, increasing in commit order
};

struct delivery_record {
  std::string id;
  std::int64_t receive_count = 0;
  std::int64_t at_ns = 0;
  bool acked = false;
  std::string source;  // the log it came from, for reports
};

struct delivery_report {
  long produced = 0;           // distinct ids the producers logged
  long delivered_ids = 0;      // distinct ids handled at least once
  long deliveries = 0;         // handle records
  long acked_ids = 0;          // distinct ids with a successful ack
  long unlogged = 0;           // handled ids no producer logged (committed, killed before the log line)
  long duplicates = 0;         // deliveries after an id's first
  long explained_duplicates = 0;
  long republished = 0;        // ids a producer's repeated publish inserted anew
  std::vector<std::string> lost;          // produced, never handled
  std::vector<std::string> unexplained;   // ids acked by more than one delivery (double claims)
  std::vector<std::string> order_violations;  // "group: seq b first handled after seq a > b"

  [[nodiscard]] bool ok() const { return lost.empty() && unexplained.empty() && order_violations.empty(); }
  [[nodiscard]] std::string summary() const;
};

// Pure check over parsed records. With check_group_order, each group's first
// deliveries must come in seq order (ids no producer logged are left out).
// republished: ids a producer's repeated publish inserted anew; two acked
// deliveries of such an id are the producer's duplicate, not a double claim.
[[nodiscard]] delivery_report check_deliveries(const std::vector<produced_record>& produced,
                                               const std::vector<delivery_record>& deliveries,
                                               bool check_group_order,
                                               const std::vector<std::string>& republished = {});

// Parses every file named <prefix>*.log in dir. Producer files hold P lines,
// consumer files H and A lines; both may be the same file.
void read_logs(const std::filesystem::path& dir, const std::string& prefix, std::vector<produced_record>& produced,
               std::vector<delivery_record>& deliveries, std::vector<std::string>* republished = nullptr);

// Appends one whole line with a single write(2) (O_APPEND): what a process
// killed right after it wrote survives. Throws std::system_error.
class log_writer {
 public:
  explicit log_writer(const std::filesystem::path& file);
  ~log_writer();
  log_writer(const log_writer&) = delete;
  log_writer& operator=(const log_writer&) = delete;
  void line(const std::string& text);  // text without the newline

 private:
  int fd_ = -1;
};

// CLOCK_MONOTONIC in nanoseconds: comparable across processes of one machine.
[[nodiscard]] std::int64_t monotonic_ns();

}  // namespace spool::test
