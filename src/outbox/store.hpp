// The outbox's store seam: everything that is SQL, behind one narrow
// interface with a PostgreSQL and a SQLite implementation. Argument checks,
// sanitising, observer events and the archiver thread live once, above it
// (store.cpp, store_leases.cpp, store_transitions.cpp, store_admin.cpp,
// store_prune.cpp); the writer's engine halves live in writer_*.cpp.
// Thread safety: implementations are safe from many threads (pooled connections).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spool/call_options.hpp"
#include "spool/database.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"

struct pg_conn;

namespace spool::outbox::detail {

// Resolved, validated names of one outbox.
struct names {
  std::string schema;     // PostgreSQL: resolved schema; SQLite: "main"
  std::string table;      // validated, unquoted
  std::string audit;      // validated, unquoted
  std::string qualified;  // "schema.table", the ledger target and audit's outbox_table
};

// Validates config (invalid_identifier) and fills the defaults; schema is
// left empty when not configured (resolve it with resolve_schema).
names names_of(const outbox_config& c, engine kind);
// PostgreSQL: current_schema() when none is configured (connects once).
void resolve_schema(names& n, database& db);

// Embedded SQL of one engine with {{t}} (quoted qualified table), {{a}}
// (quoted qualified audit table), {{cols}} (the full row, see decode_row),
// and on PostgreSQL US[expr] (timestamptz → epoch µs) and TS[expr] (the inverse).
std::string render(engine kind, std::string_view file, const names& n);

// Microseconds since the epoch.
[[nodiscard]] inline std::int64_t micros(time_point t) { return t.time_since_epoch().count(); }
[[nodiscard]] inline time_point from_micros(std::int64_t us) { return time_point(std::chrono::microseconds(us)); }
[[nodiscard]] std::int64_t host_now_us();

// A full row as {{cols}} selects it, from column `first` on.
struct full_row {
  envelope message;
  message_state state = message_state::pending;
  std::optional<std::string> lease_owner, lease_token;
  std::optional<time_point> leased_until, delivered_at, dead_lettered_at;
  std::optional<std::string> last_error_code, last_error;
  time_point updated_at;
};
// Errors: invalid_state (malformed_row) when a column cannot be decoded.
full_row decode_row(const row& r, std::size_t first = 0);
// metadata JSON object text → map; throws malformed_row.
std::map<std::string, std::string> decode_metadata(const std::string& json);
std::string encode_metadata(const std::map<std::string, std::string>& m);

// Maps constraint and schema errors of outbox statements to the outbox's
// reasons (value_outside_bounds, schema_version_mismatch); other errors pass.
[[noreturn]] void rethrow_translated();

// A fenced transition (§4).
struct transition {
  enum class kind { deliver, retry, dead, release } what = kind::deliver;
  std::optional<std::int64_t> delay_us;  // retry: after(delay)
  std::optional<std::int64_t> at_us;     // retry: at(instant)
  std::string code, message;             // retry, dead: sanitised already
};

// What a successful fenced transition reports (for events).
struct transition_row {
  std::string topic;
  std::uint32_t claim_count = 0, failure_count = 0;
};

struct terminal_selection {
  std::vector<archived_message> rows;
};

class store_backend {
 public:
  virtual ~store_backend() = default;
  // invalid_state: schema_version_mismatch (missing or old), schema_too_new.
  virtual void check_schema(int expected_version, const call_options& c) = 0;
  virtual std::vector<claimed_message> claim(const std::string& owner, std::size_t limit, std::int64_t lease_us,
                                             serialization mode, const call_options& c) = 0;
  // nullopt: lease lost.
  virtual std::vector<std::optional<time_point>> extend(const std::vector<lease_ref>& refs, std::int64_t lease_us,
                                                        const call_options& c) = 0;
  // nullopt: lease lost (rolled back, nothing changed). fn runs after the
  // fence check, before commit, on the backend's own transaction.
  virtual std::optional<transition_row> fenced(const lease_ref& ref, const transition& t,
                                               const std::function<void(spool::tx&)>* fn,
                                               const call_options& c) = 0;
  // T5 for every ref in one transaction; per ref the transition's row, or
  // nullopt when that lease was lost (that row is left unchanged, the
  // others commit).
  // fn (optional) runs after the fences, before commit, with which refs are
  // still held; its exception rolls back all.
  using batch_fn = std::function<void(spool::tx&, const std::vector<bool>&)>;
  virtual std::vector<std::optional<transition_row>> deliver_many(const std::vector<lease_ref>& refs,
                                                                  const batch_fn* fn,
                                                                  const call_options& c) = 0;
  // mark_delivered_and_claim_next (§6.2): T5 and, in the same transaction,
  // at most one claim of the next eligible row of the delivered row's scope
  // value for the lease's owner. nullopt: lease lost (nothing changed).
  struct deliver_next_outcome {
    transition_row delivered;
    std::optional<claimed_message> next;
  };
  virtual std::optional<deliver_next_outcome> deliver_and_claim_next(const lease_ref& ref, std::int64_t lease_us,
                                                                     serialization mode, const call_options& c) = 0;
  virtual backlog_info backlog(const call_options& c) = 0;
  // q checked already; before: (created_at µs, id) exclusive upper bound.
  virtual std::vector<message_summary> inspect(const inspect_query& q,
                                               const std::optional<std::pair<std::int64_t, std::string>>& before,
                                               const call_options& c) = 0;
  // The row as {{cols}} selects it; nullopt: no row.
  virtual std::optional<row> get(const std::string& id, const call_options& c) = 0;
  // replay_history.sql's rows.
  virtual std::vector<row> replay_history(const std::string& id, std::size_t limit, const call_options& c) = 0;
  virtual horizon_info horizon(const call_options& c) = 0;
  // Locks the rows, checks them; on a problem returns the per-id statuses
  // (nothing changed); else applies T9 and the audit and returns the previous states.
  struct replay_outcome {
    bool conflict = false;
    std::vector<std::pair<std::string, replay_item_status>> statuses;
    std::vector<std::pair<std::string, message_state>> previous;
  };
  virtual replay_outcome replay(const replay_request& r, const std::string& replay_id, std::int64_t lock_timeout_ms,
                                const call_options& c) = 0;
  // Deletes (prune) or selects, archives through `archive` and deletes
  // (archive != nullptr). `archive` throws to roll back.
  virtual std::vector<std::string> prune(message_state s, const cutoff& before, std::size_t limit,
                                         const std::function<void(const std::vector<archived_message>&)>* archive,
                                         std::int64_t tx_timeout_ms, const call_options& c) = 0;
  virtual void ping(const call_options& c) = 0;
  // store::subscribe_changes (spool/outbox/store.hpp): fn(true) for a change
  // of this table, fn(false) for "look now".
  virtual std::shared_ptr<void> subscribe_changes(const std::string& channel, std::function<void(bool)> fn) = 0;
  // The row's state and whether its lease token is the given one; nullopt: no row.
  virtual std::optional<std::pair<message_state, bool>> lease_state(const lease_ref& ref, const call_options& c) = 0;
};

// Shared by both backends (backend_shared.cpp): inspect rows → summaries;
// replay's per-id statuses (true when any id is not terminal).
std::vector<message_summary> summaries_of(const std::vector<row>& rows);
// The detail of a decoded full row; replay_history.sql's rows as records.
message_detail detail_of(full_row&& r);
std::vector<replay_record> records_of(const std::vector<row>& rows);
// inspect.sql's parameters after the cursor's ($6..$8 / ?6..?8).
std::vector<param> inspect_filters(const inspect_query& q);
bool replay_conflicts(const std::vector<std::string>& ids, const std::vector<row>& locked,
                      store_backend::replay_outcome& out);

// The backend for db's engine, the schema resolved on PostgreSQL (store_select.cpp:
// the one place the outbox store picks its engine).
std::unique_ptr<store_backend> make_backend(database& db, names n);
std::unique_ptr<store_backend> make_postgres_backend(database db, names n);
std::unique_ptr<store_backend> make_sqlite_backend(database db, names n);

// ---- the writer's engine halves ----

// One envelope ready for the INSERT, plus whether it is a keeper (not a
// batch-internal idempotency repeat dropped under `skip`).
struct insert_input {
  const envelope* e = nullptr;
};

// Runs one statement in the caller's transaction.
using exec_fn = std::function<std::vector<row>(const std::string& sql, const std::vector<param>& params)>;

// Inserts rows (one INSERT … ON CONFLICT DO NOTHING), classifies the rows it
// did not insert, and on an error outcome deletes the rows it inserted, so
// the batch leaves nothing. Returns results parallel to `batch`.
std::vector<insert_result> postgres_insert(const exec_fn& exec, const names& n, const std::vector<const envelope*>& batch,
                                           idempotency_policy policy, bool notify, const std::string& channel);
std::vector<insert_result> sqlite_insert(const exec_fn& exec, const names& n, const std::vector<const envelope*>& batch,
                                         idempotency_policy policy);
// The insert for the writer's engine (writer_engines.cpp).
std::vector<insert_result> insert_rows(engine kind, const exec_fn& exec, const names& n,
                                       const std::vector<const envelope*>& batch, const writer_options& o);

// transaction_required unless the caller's transaction is open; on PostgreSQL
// also refuses a pipelined connection and (invalid_state,
// transaction_aborted) a failed block.
void require_block(::pg_conn* conn);
void require_open(spool::tx& tx);

}  // namespace spool::outbox::detail
