// spool::mq::queue — the SQS-like message queue of message-queue.md on
// PostgreSQL or SQLite, sharing the legacy queue_messages table.
// Thread safety: a queue is safe to use from many threads; calls run
// concurrently up to the database's pool size. stop() is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/call_options.hpp"
#include "spool/database.hpp"
#include "spool/mq/message.hpp"

namespace spool {
class tx;
}

namespace spool::mq {

// Spool's queue options (message-queue.md §4), validated once at construction.
struct queue_options {
  std::string name;                             // queue_name; required, non-empty
  std::chrono::seconds visibility_timeout{0};   // claim window; 0 means 30 s
  std::string schema;                           // PostgreSQL schema; empty: current_schema()
  bool strict_validation = false;               // §3.3
  bool strict_group_order = false;              // §7.1: one message per group in flight
  std::uint32_t max_receive_count = 0;          // §7.2: 0 = unbounded
  // I10 (PostgreSQL): publish, ack and zero-delay nack/defer NOTIFY channel
  // spool_mq in their transaction, and poll_wait LISTENs through the process's
  // shared listener. Off by default: NOTIFY takes a cluster-wide lock at commit.
  bool notify = false;
  std::chrono::milliseconds poll_interval{1000};  // poll_wait's polling fallback
  std::size_t max_payload_bytes = 1u << 20;     // checked on publish only
  // At most this many polls of 32 or more messages claim at once through
  // this handle (0: no limit); more wait their turn, within their
  // call_options. Batch claims running together walk past each other's
  // locked rows, so beyond a few they add database work, not throughput
  // (docs/BENCHMARKS.md, round 13). Smaller polls are never held: their
  // commits share the disk's flushes.
  std::size_t claim_concurrency = 4;
};

// The legacy JSON queue configuration (§4): {"queueName","queueUri","connections","visibilityTimeout"}.
struct queue_config {
  std::string queue_name;  // empty: the URI
  std::string queue_uri;
  std::uint32_t connections = 1;
  // Absent in JSON means 120 s; 0 (the value of a config built in code) means 30 s.
  std::uint32_t visibility_timeout = 0;

  // Parses the wire form; aliases "name" and "uri" (canonical keys win).
  // Errors: invalid_argument naming the key for a wrong type or range.
  [[nodiscard]] static queue_config from_json(std::string_view json);
  // Always writes the four canonical keys.
  [[nodiscard]] std::string to_json() const;
  // The name the queue uses and stores in every row: queue_name, else the URI
  // with any password replaced by *** (legacy stores the URI as it is, password
  // included; give queueName to share such a queue with legacy services).
  [[nodiscard]] std::string effective_name() const;
  [[nodiscard]] std::chrono::seconds effective_visibility() const;
};

// A claimed message as poll returns it.
struct delivered_message {
  message body;
  std::string receipt;            // "<poll uuid>:<id>"
  std::string broker_message_id;  // the row id
  std::string queue;              // the queue name
  std::optional<std::int64_t> receive_count;
  std::int64_t created_at = 0;  // Unix seconds
  std::optional<std::string> group;  // message_group_id column
};

enum class publish_status { inserted, already_present };

struct publish_result {
  std::vector<std::string> ids;           // input order, duplicates included
  std::vector<publish_status> statuses;   // parallel to ids
};

// One row of insert_batch: a message for a named queue.
struct batch_row {
  std::string queue_name;
  message body;
};

// Options of the transactional insert_batch (no queue object needed).
struct insert_options {
  std::string schema;
  std::size_t max_payload_bytes = 1u << 20;
  std::chrono::seconds delay{0};
  bool notify = false;  // PostgreSQL: NOTIFY spool_mq for each queue written (I10)
};

enum class ack_status { acked, not_found };

struct queue_counters {
  std::string identifier;
  std::uint64_t polled = 0, acked = 0, nacked = 0, deferred = 0;
  std::uint64_t quarantined = 0;  // rows this object's polls moved to queue_messages_failed (§5.2)
};

struct queue_metrics {
  std::string identifier;
  std::int64_t pending = 0;    // unclaimed and visible
  std::int64_t in_flight = 0;  // claimed (including lapsed claims)
  std::int64_t delayed = 0;    // unclaimed, not yet visible
  std::int64_t expired = 0;    // claimed, window lapsed (subset of in_flight)
  queue_counters totals;       // this process's counters
};

struct failed_message {
  std::string id;
  std::optional<std::string> group;
  std::string payload;
  std::string error_message;
  std::optional<std::int64_t> receive_count;
  std::optional<std::int64_t> created_at;
  std::int64_t failed_at = 0;
};

// Redrive (§7.3): move quarantined rows back to the queue's tail.
struct redrive_options {
  std::vector<std::string> ids;  // empty: every quarantined row of the queue
  std::string reason = "redrive";
  std::string actor;  // empty: the OS user
  bool dry_run = false;
};

struct redrive_result {
  std::vector<std::string> redriven;   // moved (or, with dry_run, would move)
  std::vector<std::string> conflicts;  // a live row holds the id; kept in quarantine
  std::vector<std::string> missing;    // requested ids not in quarantine
};

class queue {
 public:
  // Builds a queue over db. Never connects and never runs DDL.
  // Errors: invalid_argument (empty name, invalid schema).
  queue(database db, queue_options options);
  // Builds a queue from the legacy JSON config, with a private database whose
  // pool size is config.connections. Errors: invalid_argument (URI, values).
  explicit queue(const queue_config& config, queue_options options = {});
  ~queue();  // stops
  queue(const queue&) = delete;
  queue& operator=(const queue&) = delete;

  // Claims up to max messages (§5.1); quarantines poison rows (§5.2).
  // Errors: stopped, invalid_state (tables missing), unavailable, in_doubt.
  [[nodiscard]] std::vector<delivered_message> poll(std::size_t max, const call_options& call = {});
  // poll, and when nothing was claimed wait for a publish in this process, the
  // poll interval, timeout or stop, then poll again; empty at the timeout.
  [[nodiscard]] std::vector<delivered_message> poll_wait(std::size_t max, std::chrono::milliseconds timeout,
                                                       const call_options& call = {});

  // Deletes the claimed row (§5.3). Errors: not_found (stale or unknown
  // receipt), invalid_argument (malformed receipt), stopped, unavailable, in_doubt.
  void ack(std::string_view receipt, std::string_view broker_message_id = {}, const call_options& call = {});
  // Acks many receipts in one statement (I8); per receipt acked or not_found.
  [[nodiscard]] std::vector<ack_status> ack_batch(const std::vector<std::string>& receipts,
                                                const call_options& call = {});
  // Releases the claim, visible again after delay (§5.4). false when no row
  // held the receipt. nack counts a failure, defer does not.
  bool nack(std::string_view receipt, std::chrono::seconds delay = std::chrono::seconds{0}, const call_options& call = {});
  bool defer(std::string_view receipt, std::chrono::seconds delay = std::chrono::seconds{0},
             const call_options& call = {});
  // Moves the claim's window to now + window, keeping the receipt (I9).
  // Errors: not_found, invalid_argument.
  void extend_visibility(std::string_view receipt, std::chrono::seconds window, const call_options& call = {});

  // Publishes in one auto-committed statement (§5.5). An empty id gets a
  // UUIDv7. Errors: invalid_argument (encoding, payload size; nothing
  // inserted), stopped, unavailable, in_doubt (retrying with the ids is safe).
  publish_result publish(const message& m, std::chrono::seconds delay = std::chrono::seconds{0},
                         const call_options& call = {});
  publish_result publish_batch(const std::vector<message>& batch, std::chrono::seconds delay = std::chrono::seconds{0},
                               const call_options& call = {});
  // The same inside the caller's transaction (spool::tx, or spool::pg::tx /
  // spool::sqlite::tx); never commits. Errors as above, plus
  // transaction_required and invalid_argument (wrong_engine) for a
  // transaction on another engine than the queue's.
  publish_result publish(spool::tx& tx, const message& m, std::chrono::seconds delay = std::chrono::seconds{0});
  publish_result publish_batch(spool::tx& tx, const std::vector<message>& batch,
                               std::chrono::seconds delay = std::chrono::seconds{0});

  // Counts over the queue in one statement (§5.7).
  [[nodiscard]] queue_metrics metrics(const call_options& call = {});
  // Process-local totals, without database access.
  [[nodiscard]] queue_counters counters() const;
  // Quarantined rows of this queue (payloads included: they may hold secrets).
  [[nodiscard]] std::vector<failed_message> failed(std::size_t limit = 100, const call_options& call = {});
  // Moves quarantined rows back in one transaction, audited in
  // spool_mq_redrive_log. Errors: stopped, invalid_state, unavailable, in_doubt.
  redrive_result redrive(const redrive_options& options = {}, const call_options& call = {});
  // A trivial statement with a 2 s timeout; false on failure or after stop.
  [[nodiscard]] bool healthy();
  [[nodiscard]] bool honours_delayed_return() const noexcept { return true; }
  [[nodiscard]] const std::string& identifier() const noexcept;
  [[nodiscard]] std::chrono::seconds visibility_timeout() const noexcept;

  // Every database operation takes optional call_options (deadline, stop
  // token): limits that end a call before its statement is sent raise
  // `unavailable` (deadline_exceeded / cancelled); after a write was sent, `in_doubt`.

  // Stops: wakes poll_wait, waits for running calls, then every database
  // operation raises `stopped`. Idempotent; thread-safe.
  void stop();

  // Opens up to `connections` pooled connections ahead of use (at most the
  // database's pool size), so that a runtime starting does not pay a connect
  // on each of its first calls; the runtimes call it as they start. Best
  // effort: a connect that fails is not an error here (the next call
  // connects as usual). Returns the connections the pool holds. Thread-safe.
  std::size_t warm(std::size_t connections) noexcept;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

// Inserts rows for possibly several queues inside the caller's transaction
// (§5.5), one statement, all or nothing. Errors: transaction_required,
// invalid_argument, database errors.
publish_result insert_batch(spool::tx& tx, const std::vector<batch_row>& rows, const insert_options& options = {});

// Parses a receipt "<uuid>:<id>" into its id (everything after the first 37
// characters). Errors: invalid_argument for anything Spool never issues.
[[nodiscard]] std::string receipt_id(std::string_view receipt);

}  // namespace spool::mq
