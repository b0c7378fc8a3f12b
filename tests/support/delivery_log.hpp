// The delivery-log checker: reads what producers wrote and what consumers saw
// (one log file per process, appended across restarts) and judges the whole
// run: lost messages, double claims (a second claim of an id while the first
// was still live), ids acknowledged twice, per-group order, and whether the
// table's final state agrees with the acks.
//
// Log lines (tab-separated, one write() each so a SIGKILL leaves whole lines;
// a torn last line is ignored):
//   P <id> <group> <seq>           producer: <id> committed (the call returned)
//   H <id> <count> <ns> [<asked_ns> <window_ns>]
//                                  consumer: handling <id>, claimed for the
//                                  <count>-th time (receive count, attempt or
//                                  claim count) at <ns>; the claim was asked for
//                                  at <asked_ns> and holds it for at least
//                                  <window_ns> (both optional: a lease that
//                                  heartbeats extend has no fixed window)
//   A <id> <ns> [<started_ns>]     consumer: the ack of the preceding H of <id>
//                                  returned success at <ns>; it was sent at <started_ns>
//   R <id>                         producer: a repeated publish (after a restart or an error)
//                                  inserted <id> anew, possibly after it had been consumed
// <ns> are CLOCK_MONOTONIC (or, for the CLI workers' scripts, CLOCK_REALTIME)
// nanoseconds, one clock per suite.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace spool::test {

struct produced_record {
  std::string id, group;
  std::int64_t seq = 0;  // position within the group, increasing in commit order
};

struct delivery_record {
  std::string id;
  std::int64_t receive_count = 0;  // 0: unknown
  std::int64_t at_ns = 0;
  bool acked = false;
  std::string source;                        // the log it came from, for reports
  std::int64_t asked_ns = 0, window_ns = 0;  // window_ns 0: no fixed window
  std::int64_t ack_started_ns = 0;           // 0: unknown (or not acked)
};

struct check_options {
  // Each group's first deliveries come in seq order (ids no producer logged
  // are left out).
  bool group_order = false;
  // Strict group order: no delivery of a group's seq n starts before the
  // (first) ack of any earlier seq of the group was sent, so the next message
  // of a group is claimed only after the previous one's ack committed.
  bool strict_group_order = false;
  // Ids a producer's repeated publish inserted anew: a new row, so its second
  // delivery (even acked, even with the same receive count) is the
  // producer's duplicate, not a double claim.
  std::vector<std::string> republished;
  // What the clocks of two processes and the database may disagree by.
  std::int64_t tolerance_ns = 50'000'000;
};

struct delivery_report {
  long produced = 0;       // distinct ids the producers logged
  long delivered_ids = 0;  // distinct ids handled at least once
  long deliveries = 0;     // handle records
  long acked_ids = 0;      // distinct ids with a successful ack
  long unlogged = 0;       // handled ids no producer logged (committed, killed before the log line)
  long duplicates = 0;     // deliveries after an id's first
  long explained_duplicates = 0;
  long republished = 0;                       // ids a producer's repeated publish inserted anew
  std::vector<std::string> acked;             // the acked ids, sorted
  std::vector<std::string> lost;              // produced, never handled
  std::vector<std::string> unexplained;       // ids acked by more than one delivery
  std::vector<std::string> double_claims;     // a second claim while the first was live
  std::vector<std::string> order_violations;  // "group: seq b first handled after seq a > b"
  std::vector<std::string> final_state;       // the table disagrees with the log (check_final_state)

  [[nodiscard]] bool ok() const {
    return lost.empty() && unexplained.empty() && double_claims.empty() && order_violations.empty() &&
           final_state.empty();
  }
  [[nodiscard]] std::string summary() const;
};

// Pure check over parsed records.
[[nodiscard]] delivery_report check_deliveries(const std::vector<produced_record>& produced,
                                               const std::vector<delivery_record>& deliveries,
                                               const check_options& options = {});

// Adds to report.final_state every acked id (and, with every_produced, every
// produced id) whose row in states (id → state at the end; an id absent from
// it has no row) is not in done_state; an empty done_state means the row must
// be gone (the message queue deletes on ack).
void check_final_state(delivery_report& report, const std::vector<produced_record>& produced,
                       const std::map<std::string, std::string>& states, const std::string& done_state,
                       bool every_produced);

// Producer records re-sequenced by the table's own positions: rank maps id →
// (group, position within the group as the store orders it). Used where
// several producers write one group, so that no producer's log can tell the
// commit order between them (the outbox's shared ordering keys). Ids rank
// does not hold keep their records.
[[nodiscard]] std::vector<produced_record> resequenced(
    const std::vector<produced_record>& produced,
    const std::map<std::string, std::pair<std::string, std::int64_t>>& rank);

// Parses every file named <prefix>*.log in dir. Producer files hold P lines,
// consumer files H and A lines; both may be the same file.
void read_logs(const std::filesystem::path& dir, const std::string& prefix,
               std::vector<produced_record>& produced, std::vector<delivery_record>& deliveries,
               std::vector<std::string>* republished = nullptr);

// Appends one whole line with a single write(2) (O_APPEND): what a process
// killed right after it wrote survives. One writer per file at a time: on
// opening, it cuts off a line its killed predecessor left unfinished.
// Throws std::system_error.
class log_writer {
 public:
  explicit log_writer(const std::filesystem::path& file);
  ~log_writer();
  log_writer(const log_writer&) = delete;
  log_writer& operator=(const log_writer&) = delete;
  void line(const std::string& text);  // text without the newline

 private:
  void drop_torn_tail();
  int fd_ = -1;
};

// CLOCK_MONOTONIC in nanoseconds: comparable across processes of one machine.
[[nodiscard]] std::int64_t monotonic_ns();

}  // namespace spool::test
