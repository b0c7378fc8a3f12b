// spool::ops::queue — the op-queue driver of op-queue.md §4–§6 on PostgreSQL
// or SQLite, sharing filex's ops_queue table. A worker pool is built on top of
// it: dequeue(types, owner) claims only the given types, heartbeat_batch()
// keeps leases alive, ack/fail/release record outcomes fenced by the claim's
// lease token, rescue_expired() is the rescuer's one statement.
// Thread safety: a queue is safe to use from many threads at once; calls run
// concurrently up to the database's pool size. close() is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "spool/call_options.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/migrate.hpp"
#include "spool/ops/op.hpp"

struct sqlite3;

namespace spool {
class tx;
}

namespace spool::ops {

// What an enqueue does when a pending op already holds its dedup key (§6).
enum class on_duplicate {
  raise,            // error(duplicate) naming the holder (ops::duplicate_op)
  return_existing,  // {holder id, created = false}
};

// Driver options, validated once at construction.
struct queue_options {
  std::string schema;               // PostgreSQL schema; empty: current_schema() at construction
  std::string table = "ops_queue";  // configured table (≤ 41 bytes, [a-z0-9_]); index names follow it
  // The owner's explicit opt-in to run `ops` migrations at construction
  // (equivalent to spool::ops::migrate(db, options) first). Never implicit.
  bool migrate = false;
  // PostgreSQL: NOTIFY notify_channel (payload: the op type) in every
  // transaction that makes an op ready now (§4.9). Off by default: NOTIFY
  // takes a cluster-wide lock at commit.
  bool notify = false;
  std::string notify_channel = "spool_ops";
  std::string owner;  // lease_owner of claims; empty: "<host>:<pid>:<8 hex>"
  std::size_t max_payload_bytes = 1u << 20;
  std::chrono::seconds default_retry_delay{30};  // plain fail(…, retry = true)
  // The deadline of a call whose call_options carry none (§4.2).
  std::chrono::milliseconds call_timeout{30000};
  on_duplicate duplicates = on_duplicate::raise;
  // At most this many dequeue_batch calls of 32 or more ops claim at once
  // through this handle (0: no limit); more wait their turn, within their
  // deadline. Batch claims running together walk past each other's locked
  // rows (docs/BENCHMARKS.md, round 13). Smaller claims are never held.
  std::size_t claim_concurrency = 4;
};

struct enqueue_options {
  std::optional<on_duplicate> duplicates;  // unset: queue_options::duplicates
};

// A claim to keep alive: the op id and the lease token dequeue() returned.
struct lease {
  std::string id;
  std::string token;
  friend bool operator==(const lease&, const lease&) = default;
};

struct list_page {
  std::vector<op> ops;
  std::int64_t total = 0;  // rows matching the filter, from the page's snapshot
};

struct keyset_page {
  std::vector<op> ops;
  std::string next_cursor;  // empty: the end
};

// What list_after filters on; an empty field does not filter.
struct list_filter {
  std::string status;  // exact status
  std::string type;    // exact op type
};

struct queue_stats {
  std::int64_t pending = 0;  // includes scheduled ops
  std::int64_t running = 0;
  std::int64_t failed = 0;
  std::int64_t done_24h = 0;  // done with finished_at ≥ now − 24 h
  std::int64_t cancelled = 0;
};

// One type's counts (stats_by_type).
struct type_stats {
  std::string type;
  queue_stats counts;
  std::optional<std::int64_t> oldest_pending_enqueued_at;  // unix seconds; unset when none is pending
};

// Ops of one type enqueued, and finished done, in one minute (throughput).
struct throughput_minute {
  std::string type;
  std::int64_t minute = 0;  // unix seconds of the minute's start
  std::int64_t enqueued = 0, completed = 0;
};

// One op the rescuer (or a legacy orphan sweep) moved.
struct rescued_op {
  std::string id;
  std::string type;
  op_status status = op_status::pending;  // pending (requeued) or failed (budget spent)
};

// error(duplicate): a pending op holds the dedup key; holder_id() names it
// (empty when it could not be determined).
class duplicate_op : public spool::error {
 public:
  duplicate_op(const std::string& message, std::string holder_id)
      : spool::error(errc::duplicate, message), holder_id_(std::move(holder_id)) {}
  [[nodiscard]] const std::string& holder_id() const noexcept { return holder_id_; }

 private:
  std::string holder_id_;
};

class queue {
 public:
  // Builds the driver over db: connects, resolves the schema and verifies the
  // table, its columns, its indexes and the ledger (§2.3), migrating first
  // only with options.migrate. Errors: invalid_argument (options,
  // invalid_identifier), invalid_state (schema_version_mismatch naming the
  // first missing object, schema_too_new), unavailable.
  explicit queue(database db, queue_options options = {});
  // SQLite: uses the application's handle (serialised threading mode, the
  // caller's guarantee) one call at a time; never changes its settings and
  // never closes it. Errors as the constructor; invalid_argument for null.
  [[nodiscard]] static queue adopt(::sqlite3* handle, queue_options options = {});
  queue(queue&&) noexcept;
  queue& operator=(queue&&) noexcept;
  queue(const queue&) = delete;
  queue& operator=(const queue&) = delete;
  ~queue();  // closes

  // Every database call takes call_options (DESIGN.md, Calls): a deadline
  // (default: now + queue_options::call_timeout) and a stop token. Limits
  // that end a call before its statement was sent raise `unavailable`
  // (deadline_exceeded / cancelled); after a write was sent, `in_doubt`.

  // ---- enqueue (§4.3) ----
  // Validates and inserts one op (T1) in its own transaction. Errors:
  // invalid_argument (type, id, payload, max_attempts, not_before with
  // delay), already_exists (caller id in use), duplicate (ops::duplicate_op;
  // unless return_existing), stopped, unavailable, in_doubt.
  enqueue_result enqueue(const new_op& o, const enqueue_options& options = {}, const call_options& call = {});
  // The same in the caller's open transaction; never commits. The NOTIFY (if
  // on) fires at the caller's commit. Errors also transaction_required.
  // tx may be a spool::tx, spool::pg::tx or spool::sqlite::tx on the queue's
  // engine (else invalid_argument, wrong_engine).
  enqueue_result enqueue(spool::tx& tx, const new_op& o, const enqueue_options& options = {});
  // One result per input, in order, in one transaction. Atomic for validation
  // and database errors (the error names the item's index); dedup collisions
  // are per item (deduplicated), the first item of the batch winning. An op
  // whose caller id is already stored is per item too (already_exists, its
  // id): a producer retrying a batch after in_doubt, or restarting after a
  // crash, inserts only what is missing. An id repeated inside the batch is
  // invalid_argument.
  std::vector<enqueue_result> enqueue_batch(const std::vector<new_op>& ops,
                                            const enqueue_options& options = {},
                                            const call_options& call = {});
  std::vector<enqueue_result> enqueue_batch(spool::tx& tx, const std::vector<new_op>& ops,
                                            const enqueue_options& options = {});

  // ---- claim (§4.4) ----
  // Claims the ready op of highest priority, then oldest enqueued_at (T2):
  // status running, attempts + 1, a fresh lease_token, lease_owner = owner
  // (empty: this driver's owner()). types empty means any type. Nothing ready
  // (or a lost race) is an empty optional. On SQLite an idle call takes only a
  // read lock. Errors: invalid_argument (a type or owner), stopped,
  // unavailable, in_doubt.
  [[nodiscard]] std::optional<op> dequeue(const std::vector<std::string>& types = {},
                                          std::string_view owner = {}, const call_options& call = {});
  // Claims up to max ready ops (1..1,000) at once, exactly as that many
  // dequeue calls would, in claim order, each with its own lease token; one
  // statement on PostgreSQL, one transaction on SQLite. Fewer (or none) when
  // fewer are ready. Errors: invalid_argument (max outside 1..1,000, a type
  // or owner), stopped, unavailable, in_doubt. Thread-safe.
  [[nodiscard]] std::vector<op> dequeue_batch(std::size_t max, const std::vector<std::string>& types = {},
                                              std::string_view owner = {}, const call_options& call = {});
  // True when an op of one of types (empty: any) is ready now; a read only.
  [[nodiscard]] bool has_ready(const std::vector<std::string>& types = {}, const call_options& call = {});

  // ---- outcomes, fenced by the lease token (§4.5) ----
  // An empty token means "no token" (ops claimed by filex workers). Errors:
  // not_found, lease_lost (the claim is no longer current), invalid_state
  // (tokenless call on an op that is not running, naming its status),
  // stopped, unavailable, in_doubt. Replaying an ack or a terminal fail with
  // the same token after it was recorded succeeds without change.
  void ack(std::string_view id, std::string_view token = {}, const call_options& call = {});
  // Acks up to 1,000 claims in one transaction (one round trip on
  // PostgreSQL, one commit on SQLite), each fenced exactly as ack. Returns
  // the leases that were not acked — the cases where ack would throw
  // (not_found, lease_lost, invalid_state); the others are recorded (a
  // replay of a recorded ack counts as acked). Errors: invalid_argument
  // (more than 1,000 leases, an empty token, the same id twice), stopped,
  // unavailable, in_doubt (the whole batch). Thread-safe.
  [[nodiscard]] std::vector<lease> ack_batch(const std::vector<lease>& leases, const call_options& call = {});
  // retry = false: failed (T6). retry = true: pending after
  // default_retry_delay (T5), or failed once attempts ≥ max_attempts.
  // Returns the resulting status. message is stored as given, except that
  // invalid UTF-8 becomes U+FFFD and NUL bytes are removed.
  op_status fail(std::string_view id, std::string_view token, std::string_view message, bool retry,
                 const call_options& call = {});
  // fail with retry at an absolute time (the past means now) …
  op_status fail(std::string_view id, std::string_view token, std::string_view message, time_point next_run,
                 const call_options& call = {});
  // … or after a delay on the database's clock (whole seconds on SQLite, rounded up).
  op_status fail(std::string_view id, std::string_view token, std::string_view message,
                 std::chrono::microseconds delay, const call_options& call = {});
  // Back to pending without consuming the attempt (T7), e.g. on shutdown.
  void release(std::string_view id, std::string_view token, std::string_view message,
               const call_options& call = {});
  // heartbeat_at = now (T3).
  void heartbeat(std::string_view id, std::string_view token, const call_options& call = {});
  // Refreshes many leases in one statement; returns the ones that are gone
  // (not running under that token any more). Errors: stopped, unavailable.
  [[nodiscard]] std::vector<lease> heartbeat_batch(const std::vector<lease>& leases,
                                                   const call_options& call = {});

  // ---- operator calls (§4.6–§4.8) ----
  // pending → cancelled (T11); returns the op after. Errors: not_found,
  // invalid_state naming the current status.
  op cancel(std::string_view id, const call_options& call = {});
  // failed → pending (T12); attempts kept unless reset_attempts. Errors:
  // not_found, invalid_state, duplicate (another pending op holds its key).
  op retry(std::string_view id, bool reset_attempts = false, const call_options& call = {});
  // Errors: not_found.
  [[nodiscard]] op get(std::string_view id, const call_options& call = {});
  // status empty: all (otherwise an exact filter); limit 0 means 100, at most
  // 500; order enqueued_at DESC, id DESC; total from the page's snapshot.
  // Errors: invalid_argument (limit, offset).
  [[nodiscard]] list_page list(std::string_view status = {}, std::int64_t limit = 0, std::int64_t offset = 0,
                               const call_options& call = {});
  // Keyset pages in the same order, strictly after cursor (empty: the
  // start). Errors: invalid_argument (limit, malformed cursor).
  [[nodiscard]] keyset_page list_after(std::string_view status, std::int64_t limit,
                                       std::string_view cursor = {}, const call_options& call = {});
  // The same with a status and a type filter (each exact, empty: any).
  // Errors: invalid_argument (limit, malformed cursor, a type over 255 bytes).
  [[nodiscard]] keyset_page list_after(const list_filter& filter, std::int64_t limit,
                                       std::string_view cursor = {}, const call_options& call = {});
  // Five counts from one snapshot.
  [[nodiscard]] queue_stats stats(const call_options& call = {});
  // The same counts per type, by type name, with each type's oldest pending op.
  [[nodiscard]] std::vector<type_stats> stats_by_type(const call_options& call = {});
  // Per type and minute over the last `window` (1 min..24 h), from the ops'
  // own times: enqueued_at, and finished_at of done ops. Minutes with
  // neither are absent. Errors: invalid_argument (window).
  [[nodiscard]] std::vector<throughput_minute> throughput(std::chrono::minutes window = std::chrono::minutes(60),
                                                          const call_options& call = {});
  // Requeues (T10) every running op whose started_at is NULL or ≤ now −
  // older_than (whole seconds on SQLite); returns how many. It ignores
  // heartbeats: on a shared table it takes ops from live workers on other
  // nodes, whose outcome calls then raise lease_lost. The worker pool never
  // calls it. Errors: invalid_argument (negative).
  std::int64_t recover_orphans(std::chrono::seconds older_than, const call_options& call = {});
  // The rescuer's statement (§5.2): running ops with a lease token whose
  // heartbeat_at is older than now − lease_timeout become pending (T8), or
  // failed once the budget is spent (T9). Ops with a fresh heartbeat are
  // never taken. Errors: invalid_argument (not positive).
  std::vector<rescued_op> rescue_expired(std::chrono::milliseconds lease_timeout,
                                         const call_options& call = {});
  // §5.3: running ops without a token (filex claims) whose started_at is NULL
  // or older than older_than are requeued (T10).
  std::vector<rescued_op> recover_legacy_orphans(std::chrono::milliseconds older_than,
                                                 const call_options& call = {});

  // SQLite (§2.4): rewrites every stored timestamp that is not canonical UTC
  // text (e.g. a not_before a pre-fix filex writer stored after the
  // migration) and returns how many values changed; the normalisation of
  // migration ops/3, run again. PostgreSQL: 0. Errors: invalid_state
  // (malformed_row, naming the op and the column; nothing changed).
  std::int64_t repair_times(const call_options& call = {});

  // ---- wake-ups (§4.9) ----
  // A cheap value that changes after a commit that may have made an op ready:
  // this process's writes on this database, NOTIFYs when notify is on
  // (PostgreSQL), and commits by other processes (SQLite, PRAGMA data_version).
  [[nodiscard]] std::uint64_t change_marker();
  // PostgreSQL with notify on: calls fn on the process's listener thread
  // with true when a NOTIFY on notify_channel names one of types, and with
  // false when the listener (re)starts listening (notifications may have been
  // missed: look now). fn must be short and must not call the queue.
  // Destroying the handle unsubscribes; once that returns, fn is not called
  // again. Otherwise (SQLite, notify off): an empty handle, fn never called —
  // use wait_for_change. Thread-safe.
  [[nodiscard]] std::shared_ptr<void> subscribe_ready(std::vector<std::string> types,
                                                      std::function<void(bool matched)> fn);

  // Why wait_for_change returned; checked in this order (close wins).
  enum class wake { closed, stopped, changed, timed_out };
  // Waits until change_marker() != seen, timeout, stop requested or close, and
  // says which. PostgreSQL with notify: listens on notify_channel through the
  // process's shared listener. SQLite: re-reads the commit detector every
  // 50 ms. Errors: stopped when already closed. Thread-safe.
  wake wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout, std::stop_token stop = {});

  // Closes what the driver opened (the private database of open()), never an
  // adopted handle or a caller's database. Waits for running calls;
  // idempotent; afterwards every call raises `stopped`.
  void close();
  [[nodiscard]] bool closed() const;

  // Opens up to `connections` pooled connections ahead of use (at most the
  // pool size), so that a runtime starting does not pay a connect
  // on each of its first calls; the runtimes call it as they start. Best
  // effort: a connect that fails is not an error here (the next call
  // connects as usual). Returns the connections the pool holds. Thread-safe.
  std::size_t warm(std::size_t connections) noexcept;

  [[nodiscard]] const std::string& owner() const noexcept;
  [[nodiscard]] engine kind() const noexcept;
  // The schema (resolved) and table this driver uses.
  [[nodiscard]] const std::string& schema() const noexcept;
  [[nodiscard]] const std::string& table() const noexcept;
  [[nodiscard]] const queue_options& options() const noexcept;

  struct impl;

 private:
  friend queue open(std::string_view uri, queue_options options, database_options db_options);
  explicit queue(std::unique_ptr<impl> impl);
  std::unique_ptr<impl> impl_;
};

// Opens a private database from uri (DESIGN.md URIs) and the driver over it;
// close() closes that database's connections. Errors: as database::open and
// the queue constructor.
[[nodiscard]] queue open(std::string_view uri, queue_options options = {}, database_options db_options = {});

// Applies the `ops` migrations for options.schema and options.table (§2.3).
// Errors: as spool::migrate; invalid_state (malformed_row) when a SQLite
// timestamp is in no known form.
std::vector<applied_migration> migrate(database& db, const queue_options& options = {});

// The default owner of this process: "<host>:<pid>:<8 hex>".
[[nodiscard]] std::string default_owner();

}  // namespace spool::ops
