// The message queue's store seam: everything that is SQL, behind one narrow
// interface with a PostgreSQL and a SQLite implementation. Logic that is not
// SQL (JSON, receipts, counters, stop) lives once, in queue.cpp.
// Thread safety: implementations are safe from many threads (pooled connections).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spool/call_options.hpp"
#include "spool/mq/queue.hpp"

namespace spool {
class tx;
}
namespace spool::detail {
class database_impl;
}
namespace spool::pg::detail {
class connection;
}
namespace spool::sqlite::detail {
class connection;
}

namespace spool::mq::detail {

struct claimed_row {
  std::string id;
  std::string payload;
  std::optional<std::string> group;
  std::int64_t created_at = 0;
  std::optional<std::int64_t> receive_count;
};

// A message ready for insertion: encoded, id assigned.
struct encoded_row {
  const std::string* queue_name = nullptr;
  std::string id;
  std::optional<std::string> group;
  std::string payload;
};

struct counts {
  std::int64_t pending = 0, in_flight = 0, delayed = 0, expired = 0;
};

class store {
 public:
  virtual ~store() = default;
  // invalid_state (schema_version_mismatch) naming a missing table.
  virtual void check_tables(const call_options& c) = 0;
  virtual std::vector<claimed_row> claim(const std::string& queue, const std::string& poll_uuid, std::size_t max,
                                         std::int64_t visibility_s, bool strict_group_order, const call_options& c) = 0;
  // Moves one claimed row to the failed table; false when the row was gone.
  virtual bool quarantine(const std::string& queue, const std::string& id, const std::string& receipt,
                          const std::string& reason, const call_options& c) = 0;
  virtual bool ack(const std::string& queue, const std::string& id, const std::string& receipt, const call_options& c) = 0;
  virtual bool release(const std::string& queue, const std::string& id, const std::string& receipt,
                       std::int64_t delay_s, const call_options& c) = 0;
  virtual bool extend(const std::string& queue, const std::string& id, const std::string& receipt,
                      std::int64_t window_s, const call_options& c) = 0;
  // Per input position: true when that receipt deleted a row.
  virtual std::vector<bool> ack_batch(const std::string& queue, const std::vector<std::string>& ids,
                                      const std::vector<std::string>& receipts, const call_options& c) = 0;
  // Auto-committed batch insert; per row: true when inserted.
  virtual std::vector<bool> insert(const std::vector<encoded_row>& rows, std::int64_t delay_s, const call_options& c) = 0;
  virtual counts metrics(const std::string& queue, const call_options& c) = 0;
  virtual std::vector<failed_message> failed(const std::string& queue, std::size_t limit, const call_options& c) = 0;
  virtual bool healthy() = 0;
  // Redrive (§7.3): per candidate id, true when it moved (or, with dry_run,
  // would move), false for a conflict with a live row. ids empty = all.
  virtual std::vector<std::pair<std::string, bool>> redrive(const std::string& queue,
                                                            const std::vector<std::string>& ids,
                                                            const std::string& actor, const std::string& reason,
                                                            bool dry_run, const call_options& c) = 0;
};

// schema: validated schema name or empty (current_schema()).
// notify: NOTIFY spool_mq in the transaction of every write that can make a row claimable (I10).
// The store for db's engine (store_select.cpp: the one place the message queue picks its engine).
std::unique_ptr<store> make_store(spool::detail::database_impl& db, const std::string& schema, bool notify);
std::unique_ptr<store> make_postgres_store(spool::detail::database_impl& db, const std::string& schema, bool notify);
std::unique_ptr<store> make_sqlite_store(spool::detail::database_impl& db);

// Quarantines one row claimed with `receipt` (§5.2): cuts `reason` to 1000 bytes on a code-point boundary
// (§3.4), moves the row and logs WARN with the stored text. Never throws: a failure is logged and leaves the
// row claimed. `shown` is the queue name as logs show it (password redacted). A free function, not a queue
// member, so tests can drive the cut with a reason longer than any the queue produces today.
bool quarantine_row(store& st, const std::string& queue, const std::string& shown, const std::string& id,
                    const std::string& receipt, const std::string& reason);

// The insert of publish(tx, …) on the caller's transaction, whichever its engine (store_select.cpp); never
// commits. Errors: transaction_required, then as store::insert.
std::vector<bool> insert_in(spool::tx& tx, const std::string& schema, const std::vector<encoded_row>& rows,
                            std::int64_t delay_s, bool notify);

// Transactional inserts on a caller's connection (never commit).
std::vector<bool> postgres_insert(pg::detail::connection& conn, const std::string& schema,
                                  const std::vector<encoded_row>& rows, std::int64_t delay_s, bool notify,
                                  const call_options& c = {});
std::vector<bool> sqlite_insert(sqlite::detail::connection& conn, const std::vector<encoded_row>& rows,
                                std::int64_t delay_s, const call_options& c = {});

// Replaces {{s}} with the quoted schema and a dot (or nothing) in embedded SQL.
std::string render_sql(std::string_view path, const std::string& schema);

}  // namespace spool::mq::detail
