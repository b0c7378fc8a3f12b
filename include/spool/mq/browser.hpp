// spool::mq::browser — what an operator reads of the message queue's tables
// (the console of `spool serve`, scripts): every queue with its counts, and a
// queue's messages and quarantined rows page by page. Pages are keyset
// cursors over the primary key (queue_name, id), not offsets, so paging holds
// steady while rows come and go. Reads only; the changes an operator makes go
// through mq::queue (redrive, …).
// Thread safety: a browser may be shared between threads; each call runs on
// its own pooled connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/database.hpp"

namespace spool::mq {

// The state of a row in queue_messages: claimed (in flight, lapsed claims
// included), visible, or delayed (unclaimed, not yet visible).
enum class row_state { any, visible, in_flight, delayed };
[[nodiscard]] std::string_view to_string(row_state s) noexcept;
// "visible", "in_flight", "delayed", or "" / "any" for any. Errors: invalid_argument.
[[nodiscard]] row_state parse_row_state(std::string_view text);

struct queue_overview {
  std::string queue;
  std::int64_t visible = 0, in_flight = 0, delayed = 0, quarantined = 0;
  std::optional<std::int64_t> oldest_waiting_created_at;  // unix seconds; unset when nothing waits
};

// Rows of a queue created in one second (browser::created_since).
struct arrivals {
  std::string queue;
  std::int64_t second = 0;  // unix seconds: the rows' created_at
  std::int64_t rows = 0;    // still there
};

struct message_view {
  std::string queue, id;
  std::optional<std::string> group;
  row_state state = row_state::visible;
  std::int64_t visible_at = 0, created_at = 0;  // unix seconds
  std::int64_t receive_count = 0;
  std::string payload;  // whole in message(); the first 240 characters in a page
  std::int64_t payload_bytes = 0;
  // message() only: the receipt of the claim holding it, for mq::queue's
  // nack or extend_visibility on an operator's behalf (fenced like any
  // receipt: refused once the claim ends).
  std::optional<std::string> receipt;
};

struct quarantined_view {
  std::string queue, id;
  std::optional<std::string> group;
  std::string payload;  // whole in quarantined_message(); the first 240 characters in a page
  std::string error_message;
  std::optional<std::int64_t> receive_count, created_at;
  std::int64_t failed_at = 0;
  std::int64_t payload_bytes = 0;
};

struct message_filter {
  std::string queue;  // required
  std::optional<std::string> group;
  row_state state = row_state::any;
  std::string id_prefix;
  std::optional<std::chrono::seconds> min_age;  // created at least this long ago
  std::string after;                            // a page's `next`; empty: from the start
  std::size_t limit = 50;                       // 1..500
};

struct message_page {
  std::vector<message_view> messages;  // id order
  std::optional<std::string> next;     // set when more rows follow
};

struct quarantine_filter {
  std::string queue;  // required
  std::optional<std::string> group;
  std::string id_prefix;        // the id starts with it (bytes, no wildcards)
  std::string reason_contains;  // a substring of the quarantine reason (no wildcards)
  std::string after;            // a page's `next`; empty: from the start
  std::size_t limit = 50;       // 1..500
};

struct quarantine_page {
  std::vector<quarantined_view> rows;  // id order
  std::optional<std::string> next;
};

class browser {
 public:
  // schema: PostgreSQL schema of queue_messages (empty: current_schema()).
  // Errors: invalid_argument for an invalid schema name.
  explicit browser(database db, std::string schema = {});

  // Every queue that holds a message or a quarantined row, by name.
  // Errors: unavailable, database_error (tables missing: `spool migrate`).
  [[nodiscard]] std::vector<queue_overview> queues();
  // The rows still there per queue and creation second, for the seconds from
  // `since` (unix seconds) on, by queue and second: a sampler compares two
  // readings to count arrivals. Errors: as queues().
  [[nodiscard]] std::vector<arrivals> created_since(std::int64_t since);
  // Errors: invalid_argument (empty queue, limit, a filter over 1,000 bytes), then as queues().
  [[nodiscard]] message_page messages(const message_filter& f);
  // nullopt when the queue holds no such id.
  [[nodiscard]] std::optional<message_view> message(std::string_view queue, std::string_view id);
  [[nodiscard]] quarantine_page quarantined(std::string_view queue, std::string_view after = {},
                                            std::size_t limit = 50);
  // The quarantined rows the filter matches, in id order. Errors: as messages().
  [[nodiscard]] quarantine_page quarantined(const quarantine_filter& f);
  [[nodiscard]] std::optional<quarantined_view> quarantined_message(std::string_view queue,
                                                                    std::string_view id);

 private:
  [[nodiscard]] std::string sql(std::string_view file) const;
  database db_;
  std::string schema_;
};

}  // namespace spool::mq
