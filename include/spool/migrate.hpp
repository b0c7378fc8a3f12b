// Schema migrations (DESIGN.md, Migrations). The only Spool calls that run DDL.
// Thread safety: safe to call from several processes at once; runners are
// serialised by a lock (PostgreSQL advisory lock; SQLite BEGIN IMMEDIATE).
#pragma once

#include <string>
#include <vector>

#include "spool/database.hpp"

namespace spool {

struct migrate_options {
  // Components to migrate ("mq", "ops", "outbox"); empty means all.
  std::vector<std::string> components;
  // PostgreSQL schema for the tables; empty means current_schema().
  std::string schema;
  // The op queue's table (op-queue.md §2.1); empty means "ops_queue". At most
  // 41 bytes of [a-z0-9_]; index names follow it (idx_<table>_…).
  std::string ops_table;
  // The outbox's tables (outbox.md §3.1); empty means "outbox_messages" and
  // "<outbox_table>_replay_audit". The table at most 50 bytes of [a-z0-9_].
  std::string outbox_table;
  std::string outbox_audit_table;
};

struct applied_migration {
  std::string component;
  int version = 0;
  std::string name;
};

// Applies every pending version of the selected components and returns what
// it applied (empty when up to date). Errors: invalid_argument (unknown
// component, invalid schema name), unavailable (lock not obtained within 60 s),
// invalid_state (migration_checksum_mismatch; malformed_row when the SQLite
// ops/3 step meets a timestamp in no known form), database_error.
std::vector<applied_migration> migrate(database& db, const migrate_options& options = {});

// The same versions as plain SQL for one engine, without connecting, for
// teams that apply migrations with their own tool. Each version records itself
// in spool_schema_migrations.
[[nodiscard]] std::string migration_script(engine kind, const migrate_options& options = {});

// Runs the Down section of one version ("mq/2"). Destroys data: the caller
// must confirm. Errors: invalid_argument (unknown version or not confirmed).
void revert_migration(database& db, const std::string& component_version, bool confirm_data_loss,
                      const migrate_options& options = {});

namespace mq {
// Applies the message-queue schema only (message-queue.md §2.3, init_schema).
std::vector<applied_migration> migrate(database& db, std::string schema = {});
}  // namespace mq

}  // namespace spool
