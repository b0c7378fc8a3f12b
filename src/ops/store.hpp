// The op queue's store seam: everything that is SQL, behind one narrow
// interface with a PostgreSQL and a SQLite implementation (op-queue.md §4).
// Validation, decoding, fencing rules, dedup retries and wake-ups live once,
// above it, in queue.cpp, the queue_*.cpp files and their helpers.
// Thread safety: implementations are safe from many threads (pooled
// connections; an adopted SQLite handle is serialised by a pool of one).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "ops/validate.hpp"
#include "spool/call_options.hpp"
#include "spool/database.hpp"
#include "spool/ops/queue.hpp"

namespace spool {
class tx;
}
namespace spool::detail {
class database_impl;
class wake_signal;
template <class Conn>
class pool;
}  // namespace spool::detail
namespace spool::pg::detail {
class connection;
}
namespace spool::sqlite::detail {
class connection;
}

namespace spool::ops::detail {

// Where the op queue lives and how it announces work (validated names).
struct store_config {
  std::string schema;  // PostgreSQL: resolved at construction; SQLite: empty
  std::string table;
  bool notify = false;
  std::string channel;
};

// An outcome call (§4.5): the change applies only to a running row whose
// lease_token equals token (both absent for a tokenless call).
struct fence_request {
  enum class kind { ack, fail, release, heartbeat } what = kind::ack;
  std::string id;
  std::optional<std::string> token;
  std::string message;                                   // fail, release (already sanitised)
  bool retry = false;                                    // fail
  std::optional<time_point> retry_at;                    // fail with retry: absolute …
  std::optional<std::chrono::microseconds> retry_delay;  // … or relative (database clock)
};

// The row as the call found it (under its lock) and what happened.
struct fence_result {
  bool found = false;
  std::string status;                      // before the call
  std::optional<std::string> lease_token;  // before the call
  bool applied = false;
  std::string new_status;  // when applied
};

// cancel and retry: the status found, and the op after the change (if applied).
struct status_change {
  bool found = false;
  std::string before;
  std::optional<row> after;  // the 16 op columns
};

// A keyset position: the stored enqueued_at as the engine renders it, and the id.
// What an insert did with one item.
enum class insert_outcome {
  inserted,
  key_held,  // a pending op holds its dedup key
  id_taken,  // an op with its (caller's) id is stored
};

struct cursor_key {
  std::string enqueued_at;
  std::string id;
};

class store {
 public:
  virtual ~store() = default;
  // Verifies table, columns, indexes and the ledger (§2.3). Errors:
  // invalid_state (schema_version_mismatch, schema_too_new).
  virtual void check_schema(const call_options& call) = 0;
  // Inserts in one auto-committed transaction, what it can: per item the
  // outcome (a stored id or a held key skips that item only). Errors:
  // database errors.
  virtual std::vector<insert_outcome> insert(const std::vector<insert_item>& items,
                                             const call_options& call) = 0;
  // The pending holder of each key (nullopt when none holds it now).
  virtual std::vector<std::optional<std::string>> holders(const std::vector<std::string>& keys,
                                                          const call_options& call) = 0;
  virtual bool has_ready(const std::vector<std::string>& types, const call_options& call) = 0;
  // Claims one ready op (T2); the returned row carries the 16 op columns.
  virtual std::optional<row> claim(const std::vector<std::string>& types, const std::string& owner,
                                   const std::string& token, const call_options& call) = 0;
  // Claims up to tokens.size() ready ops in claim order (T2 for each), the
  // n-th with the n-th token; the rows carry the 16 op columns.
  virtual std::vector<row> claim_many(const std::vector<std::string>& types, const std::string& owner,
                                      const std::vector<std::string>& tokens, const call_options& call) = 0;
  virtual fence_result outcome(const fence_request& request, const call_options& call) = 0;
  // Acks (kind ack only), each fenced as outcome(); per request in order,
  // the row as that ack found it and whether it applied. SQLite runs one
  // transaction; PostgreSQL commits the acks that apply in one statement,
  // then classifies the rest (re-checking each fence) in a second.
  virtual std::vector<fence_result> ack_many(const std::vector<fence_request>& acks,
                                             const call_options& call) = 0;
  // Per lease: true when its heartbeat was refreshed.
  virtual std::vector<bool> heartbeat_batch(const std::vector<lease>& leases, const call_options& call) = 0;
  virtual status_change cancel(const std::string& id, const call_options& call) = 0;
  // Errors: duplicate_op when another pending op holds the row's key.
  virtual status_change retry(const std::string& id, bool reset_attempts, const call_options& call) = 0;
  virtual std::optional<row> get(const std::string& id, const call_options& call) = 0;
  // The page's rows and the total, from one snapshot.
  virtual std::pair<std::vector<row>, std::int64_t> list(const std::string& status, std::int64_t limit,
                                                         std::int64_t offset, const call_options& call) = 0;
  virtual std::vector<row> list_after(const list_filter& filter, std::int64_t limit,
                                      const std::optional<cursor_key>& after, const call_options& call) = 0;
  virtual queue_stats stats(const call_options& call) = 0;
  // Rows of stats_by_type.sql and throughput.sql, as text.
  virtual std::vector<row> stats_by_type(const call_options& call) = 0;
  virtual std::vector<row> throughput(std::int64_t window_s, const call_options& call) = 0;
  virtual std::int64_t recover_orphans(std::chrono::seconds older_than, const call_options& call) = 0;
  virtual std::vector<rescued_op> rescue(std::chrono::milliseconds lease_timeout,
                                         const call_options& call) = 0;
  virtual std::vector<rescued_op> recover_legacy(std::chrono::milliseconds older_than,
                                                 const call_options& call) = 0;
  // SQLite: normalises every timestamp again (§2.4); the number of values
  // rewritten. Errors: invalid_state (malformed_row). PostgreSQL: 0.
  virtual std::int64_t repair_times(const call_options& call) = 0;
  virtual std::uint64_t change_marker(const call_options& call) = 0;
  virtual void wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout, std::stop_token stop,
                               const std::function<bool()>& closed) = 0;
  // PostgreSQL with notify: db.subscribe on the wake-up channel (payload: the
  // op type; nullptr: look now). Otherwise an empty handle.
  virtual std::shared_ptr<void> subscribe(std::function<void(const std::string*)> fn) = 0;
  // Closes connections the store opened for itself (commit detector).
  virtual void close() = 0;
};

// PostgreSQL over db's pool; config.schema must be resolved (non-empty).
std::unique_ptr<store> make_postgres_store(spool::detail::database_impl& db, store_config config);
// The schema of a PostgreSQL driver: configured, or the connection's current_schema().
std::string resolve_pg_schema(spool::detail::database_impl& db, const std::string& configured,
                              const call_options& call);

// SQLite over a pool of connections (db's, or one adopted handle), with the
// wake signal in-process pollers wait on. path: for the commit detector's
// own connection; empty for an adopted handle (the detector then uses it).
std::unique_ptr<store> make_sqlite_store(spool::detail::pool<sqlite::detail::connection>& pool,
                                         spool::detail::wake_signal& wake, std::string path,
                                         database_options options, store_config config);

// The store for db's engine, with config.schema resolved on PostgreSQL from
// `schema` (store_select.cpp: the one place the op queue picks its engine).
std::unique_ptr<store> make_store(spool::detail::database_impl& db, const std::string& schema, store_config& config,
                                  const call_options& call);

// The inserts of enqueue(tx, …) on the caller's open transaction, whichever its
// engine (store_select.cpp); never commit. Errors: transaction_required, then as
// store::insert / store::holders.
std::vector<insert_outcome> insert_in(spool::tx& tx, const store_config& config,
                                      const std::vector<insert_item>& items);
std::vector<std::optional<std::string>> holders_in(spool::tx& tx, const store_config& config,
                                                   const std::vector<std::string>& keys);

// Inserts on a caller's connection inside its open transaction; never
// commits. Per item: the outcome, as store::insert.
std::vector<insert_outcome> postgres_insert(pg::detail::connection& conn, const store_config& config,
                                            const std::vector<insert_item>& items, const call_options& call);
std::vector<std::optional<std::string>> postgres_holders(pg::detail::connection& conn,
                                                         const store_config& config,
                                                         const std::vector<std::string>& keys,
                                                         const call_options& call);
std::vector<insert_outcome> sqlite_insert(sqlite::detail::connection& conn, const store_config& config,
                                          const std::vector<insert_item>& items, const call_options& call);
std::vector<std::optional<std::string>> sqlite_holders(sqlite::detail::connection& conn,
                                                       const store_config& config,
                                                       const std::vector<std::string>& keys,
                                                       const call_options& call);

// Renders an embedded query (sql/<engine>/ops/queries/NAME.sql) for this
// schema and table.
std::string ops_sql(engine kind, const char* name, const store_config& config);
// Renders any embedded op-queue file (a path under sql/) for this schema and table.
std::string render_ops_file(std::string_view path, const store_config& config);

}  // namespace spool::ops::detail
