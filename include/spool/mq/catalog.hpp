// spool::mq::catalog — the named queues of a database with their attributes
// and tags, as the SQS API of `spool serve` creates and lists them. A queue's
// messages stay in queue_messages under its name, so mq::queue, the CLI and
// the SQS API share them. Needs the mq_catalog migration (`spool migrate`).
// Thread safety: a catalog may be shared between threads; each call runs in
// its own transaction.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/database.hpp"
#include "spool/mq/message.hpp"

namespace spool {
class tx;
}

namespace spool::mq {

struct catalog_entry {
  std::string name;
  std::string account;                            // the creator's 12-digit account
  std::map<std::string, std::string> attributes;  // SQS's attribute names and values, as text
  std::map<std::string, std::string> tags;
  std::chrono::system_clock::time_point created, modified;
};

enum class create_outcome { created, exists };

// A send to a FIFO queue as the catalog records it.
struct fifo_ticket {
  std::string message_id;         // the message of the dedup id's first send in the window
  std::int64_t sequence_number = 0;  // increasing per queue, in commit order
  bool duplicate = false;         // the dedup id was sent within the window: send nothing
};

// Why a message moves between queues (catalog::move).
enum class move_kind {
  dead_letter,  // to a dead-letter queue: the payload records the source queue (member "sqsSourceQueue")
  redrive,      // back out of one: the record is removed
};

class catalog {
 public:
  // schema: PostgreSQL schema of the tables (empty: current_schema()).
  // Errors: invalid_argument for an invalid schema name.
  explicit catalog(database db, std::string schema = {});

  // Adds the entry unless the name is taken (then `exists`, and nothing
  // changes: the caller compares attributes). Errors: unavailable, in_doubt,
  // database_error (the table is missing: run `spool migrate`).
  create_outcome create(const catalog_entry& entry);
  // The entry of name, or nullopt.
  [[nodiscard]] std::optional<catalog_entry> find(std::string_view name);
  // Entries whose name starts with prefix, after the name `after`, in name
  // order, at most limit.
  [[nodiscard]] std::vector<catalog_entry> list(std::string_view prefix, std::string_view after,
                                                std::size_t limit);
  // Merges attributes into the entry's (an empty value removes one). False
  // when there is no such queue.
  bool set_attributes(std::string_view name, const std::map<std::string, std::string>& attributes);
  // Adds or replaces tags; removes the keys in untag. False when there is no such queue.
  bool tag(std::string_view name, const std::map<std::string, std::string>& tags,
           const std::vector<std::string>& untag = {});
  // Deletes every message of the queue, in flight too.
  void purge(std::string_view name);
  // Deletes the entry, its messages and its quarantined rows in one
  // transaction. False when there was no entry.
  bool remove(std::string_view name);

  // ---- messages of catalog queues (catalog_messages.cpp) ----

  // Inside tx, before the message is published in it: forgets the queue's
  // dedup ids older than window, then returns the first send of dedup_id if
  // it is still remembered (duplicate), else records dedup_id for message_id
  // with the queue's next sequence number. The queue row's lock orders the
  // queue's sends. Errors: not_found when the queue has no entry; the
  // transaction's errors.
  fifo_ticket record_fifo_send(spool::tx& tx, std::string_view queue, std::string_view dedup_id,
                               std::string_view message_id, std::chrono::milliseconds window);
  // Moves message id from one queue to another in one transaction, when
  // receipt still holds it (empty receipt: in any state); it arrives visible,
  // unclaimed, with its sent time and group. False when the message was not
  // there (or no longer held by receipt). An id already on the target queue
  // is kept, and the source's copy is dropped.
  bool move(std::string_view from, std::string_view id, std::string_view receipt, std::string_view to,
            move_kind kind);
  // Replaces a claimed message's payload with the encoding of m while
  // receipt still holds it (the SQS API records a first receive this way).
  // False when the receipt no longer holds it. Errors: invalid_argument (m
  // does not encode), the database's.
  bool rewrite(std::string_view queue, std::string_view id, std::string_view receipt, const message& m);
  // Deletes the queue's messages sent before cutoff, in flight too
  // (MessageRetentionPeriod).
  void expire(std::string_view queue, std::chrono::system_clock::time_point cutoff);

 private:
  database db_;
  std::string schema_;
};

}  // namespace spool::mq
