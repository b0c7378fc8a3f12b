// spool::outbox::writer — inserts envelopes inside the caller's own
// transaction (outbox.md §5); it never begins, commits or rolls back.
// Also the outbox configuration shared with the store and its migrations.
// Thread safety: a writer is immutable after construction and safe to share;
// each transaction is used by one thread at a time.
#pragma once

#include <functional>
#include <cstddef>
#include <string>
#include <vector>

#include "spool/database.hpp"
#include "spool/migrate.hpp"
#include "spool/outbox/envelope.hpp"

struct pg_conn;  // libpq's PGconn, without including libpq-fe.h

namespace spool {
class tx;
}

namespace spool::outbox {

// Names shared by writer and store (§3.1). Every identifier is 1..63 bytes of
// [a-z0-9_], not starting with a digit, pg_ or sqlite_; the table at most 50.
struct outbox_config {
  std::string schema;                   // PostgreSQL; empty: current_schema(). SQLite: empty or "main"
  std::string table = "outbox_messages";
  std::string audit_table{};  // empty: <table>_replay_audit
  std::string notify_channel = "spool_outbox";
};

// Throws error(invalid_argument, invalid_identifier) naming setting and value.
void validate(const outbox_config& c);

// Applies the outbox's pending migrations (§3.5). Errors: as spool::migrate.
std::vector<applied_migration> migrate(database& db, const outbox_config& config = {});
// The outbox's migrations as plain SQL for one engine, without connecting.
[[nodiscard]] std::string migrations(engine kind, const outbox_config& config = {});

enum class idempotency_policy { error, skip };

struct writer_options {
  outbox_config config;
  limits envelope_limits{};
  std::size_t max_batch_size = 100;  // 1..5,000, else invalid_batch_limit
  idempotency_policy on_idempotency_conflict = idempotency_policy::error;
  bool notify = false;  // PostgreSQL: pg_notify(notify_channel, qualified table) in the caller's transaction
};

enum class insert_status { inserted, skipped };

struct insert_result {
  std::string id;
  insert_status status = insert_status::inserted;
  // The stored times of an inserted row; unset for a skipped one.
  std::optional<time_point> available_at;
  std::optional<time_point> created_at;
};

namespace detail {
// A caller's PostgreSQL transaction Spool reaches through an adapter
// (spool/outbox/pqxx.hpp): runs one statement with text parameters ($1…).
class foreign_pg_tx {
 public:
  virtual ~foreign_pg_tx() = default;
  virtual std::vector<row> exec(const std::string& sql, const std::vector<param>& params) = 0;
};
}  // namespace detail

class writer {
 public:
  // Validates the options; on PostgreSQL without a configured schema resolves
  // current_schema() once (connects). Errors: invalid_argument
  // (invalid_identifier, invalid_limits, invalid_batch_limit), unavailable.
  explicit writer(database& db, writer_options options = {});

  // insert_batch of one.
  insert_result insert(spool::tx& tx, const envelope& e);
  insert_result insert(::pg_conn* conn, const envelope& e);
  insert_result insert(detail::foreign_pg_tx& tx, const envelope& e);

  // Checks, without touching the transaction: the transaction
  // (transaction_required; transaction_aborted for a failed block),
  // empty_batch, batch_too_large, each envelope's validate_for_insert (message
  // names the index), duplicate_id and idempotency_conflict within the batch.
  // Then one INSERT, all or nothing. Against stored rows: duplicate_id
  // (already_exists); idempotency_conflict (duplicate) under `error`,
  // `skipped` under `skip`; after either the transaction stays usable. A row
  // left out although no stored row holds its id or key (a conflict on the
  // position, e.g. its sequence restarted under stored rows) is
  // insert_left_out (conflict), never duplicate_id.
  // Other errors: invalid_state (schema_version_mismatch, not_writable,
  // transaction_aborted), invalid_argument (value_outside_bounds),
  // unavailable, in_doubt, database_error.
  // tx is a spool::tx (or spool::pg::tx / spool::sqlite::tx) on the writer's
  // engine; another engine's is invalid_argument (wrong_engine).
  std::vector<insert_result> insert_batch(spool::tx& tx, const std::vector<envelope>& batch);
  // A raw libpq connection idle inside a transaction block; null, pipelined or
  // outside a block is transaction_required. Only unnamed statements are used.
  std::vector<insert_result> insert_batch(::pg_conn* conn, const std::vector<envelope>& batch);
  std::vector<insert_result> insert_batch(detail::foreign_pg_tx& tx, const std::vector<envelope>& batch);

  [[nodiscard]] const writer_options& options() const noexcept { return options_; }

 private:
  void check_batch(const std::vector<envelope>& batch) const;
  void require_engine(engine k) const;
  std::vector<insert_result> insert_on(
      const std::function<std::vector<row>(const std::string&, const std::vector<param>&)>& exec,
      const std::vector<envelope>& batch);
  engine kind_;
  writer_options options_;
  std::string schema_;  // resolved (PostgreSQL)
};

}  // namespace spool::outbox
