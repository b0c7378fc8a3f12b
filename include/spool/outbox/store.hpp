// spool::outbox::store — leases committed envelopes to relays with per-row
// fencing tokens and records their outcome; backlog, inspection, audited
// replay, prune and archive (outbox.md §4, §6). Uses connections of its
// database, never a caller's transaction, and never runs DDL.
// Thread safety: every member is safe to call from many threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "spool/call_options.hpp"
#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/outbox/envelope.hpp"
#include "spool/outbox/writer.hpp"

namespace spool {
class tx;
}

namespace spool::outbox {

enum class serialization { none, by_ordering_key, by_topic };
enum class message_state { pending, leased, delivered, dead };
[[nodiscard]] std::string_view to_string(message_state s) noexcept;
// Errors: invalid_argument (invalid_message_state).
[[nodiscard]] message_state parse_message_state(std::string_view s);

// What a lease's row shows now. held: still leased with this token (it may
// have expired without being reclaimed yet); replaced: leased by another
// claim; missing: no row with that id (pruned).
enum class lease_fate { held, pending, delivered, dead, replaced, missing };
[[nodiscard]] std::string_view to_string(lease_fate f) noexcept;

// A lease: the row's id and the token of the claim that holds it.
struct lease_ref {
  std::string id;
  std::string token;
};

struct claimed_message {
  envelope message;  // counters as stored after the claim; pos set
  std::string owner;
  lease_ref ref;
  time_point leased_until;
};

struct failure {
  std::string code;     // 1..64 bytes of [a-z0-9_.]
  std::string message;  // sanitised and cut by the store
};

// When a retried row becomes claimable again.
class retry_at {
 public:
  // Database now + delay.
  [[nodiscard]] static retry_at after(std::chrono::microseconds delay) { return retry_at(delay, {}); }
  // The later of instant and database now.
  [[nodiscard]] static retry_at at(time_point instant) { return retry_at({}, instant); }
  [[nodiscard]] const std::optional<std::chrono::microseconds>& delay() const noexcept { return delay_; }
  [[nodiscard]] const std::optional<time_point>& instant() const noexcept { return instant_; }

 private:
  retry_at(std::optional<std::chrono::microseconds> d, std::optional<time_point> i)
      : delay_(d), instant_(i) {}
  std::optional<std::chrono::microseconds> delay_;
  std::optional<time_point> instant_;
};

// A prune cutoff; a default-constructed one is empty (prune_cutoff_required).
class cutoff {
 public:
  cutoff() = default;
  [[nodiscard]] static cutoff before(time_point instant) { return cutoff({}, instant); }
  [[nodiscard]] static cutoff older_than(std::chrono::microseconds age) { return cutoff(age, {}); }
  [[nodiscard]] const std::optional<std::chrono::microseconds>& age() const noexcept { return age_; }
  [[nodiscard]] const std::optional<time_point>& instant() const noexcept { return instant_; }

 private:
  cutoff(std::optional<std::chrono::microseconds> a, std::optional<time_point> i) : age_(a), instant_(i) {}
  std::optional<std::chrono::microseconds> age_;
  std::optional<time_point> instant_;
};

struct backlog_info {
  std::int64_t pending = 0, leased = 0, expired_leases = 0, dead = 0;
  std::optional<time_point> oldest_pending_created_at;
  std::chrono::microseconds oldest_pending_age{0};  // never negative
};

// A row without payload, metadata or lease token.
struct message_summary {
  std::string id, topic;
  std::uint16_t payload_version = 1;
  std::string ordering_key, idempotency_key;
  message_state state = message_state::pending;
  std::uint32_t claim_count = 0, failure_count = 0;
  time_point available_at, created_at, updated_at;
  std::optional<std::string> lease_owner;
  std::optional<time_point> leased_until, delivered_at, dead_lettered_at;
  std::optional<std::string> last_error_code, last_error;
  position pos;
};

// Every set field filters (all must match).
struct inspect_query {
  std::optional<message_state> state;
  std::optional<std::string> topic;         // exact
  std::optional<std::string> ordering_key;  // exact ("" matches unordered rows)
  std::optional<std::string> id_prefix;     // the id starts with it (1..255 bytes, no wildcards)
  // Created at least this long before database now (0..100 years).
  std::optional<std::chrono::microseconds> min_age;
  // A cursor from a previous page, or an RFC 3339 time T (rows created before T).
  std::optional<std::string> before;
  std::size_t limit = 100;
};

struct inspect_page {
  std::vector<message_summary> messages;  // (created_at, id) descending
  std::optional<std::string> next;        // set when the page is full
};

// One envelope as stored, for an operator: its summary, payload and
// metadata (never the lease token).
struct message_detail {
  message_summary summary;
  std::string payload;  // opaque bytes
  std::map<std::string, std::string> metadata;
};
// One row of the replay audit (§6.4).
struct replay_record {
  std::string replay_id, message_id;
  message_state previous_state = message_state::dead;
  std::string requested_by, reason;
  time_point requested_at, available_at;
};
// How far PostgreSQL's transaction horizon holds ordered claims back (§6.1,
// the horizon rule): a keyed row waits until every transaction that started
// before it committed has ended. SQLite has no horizon (applies false): its
// writers commit one at a time, in position order.
struct horizon_info {
  bool applies = false;
  std::uint64_t horizon_xid = 0;  // pg_snapshot_xmin of a current snapshot
  std::uint64_t next_xid = 0;     // pg_snapshot_xmax
  // Due pending rows with an ordering key that wait at or above the horizon;
  // counted up to 10,001.
  std::int64_t held = 0;
  // The oldest open transaction with an xid (or prepared transaction) this
  // role can see: what holds the horizon. pid is unset for a prepared one.
  std::optional<std::chrono::microseconds> oldest_transaction_age;
  std::optional<int> oldest_transaction_pid;
};
struct replay_request {
  std::vector<std::string> ids;
  std::string requested_by;
  std::string reason;
  std::optional<time_point> available_at{};  // unset: database now
};

enum class replay_item_status { replayable, missing, pending, leased };
[[nodiscard]] std::string_view to_string(replay_item_status s) noexcept;

// Some requested rows could not be replayed; nothing changed (errc conflict).
class replay_conflict : public error {
 public:
  explicit replay_conflict(std::vector<std::pair<std::string, replay_item_status>> items);
  [[nodiscard]] const std::vector<std::pair<std::string, replay_item_status>>& items() const noexcept {
    return items_;
  }

 private:
  std::vector<std::pair<std::string, replay_item_status>> items_;
};

struct replay_result {
  std::string replay_id;
  std::vector<std::pair<std::string, message_state>> items;  // id, previous state; request order
};

// A terminal row handed to an archiver.
struct archived_message {
  envelope message;
  message_state state = message_state::delivered;
  time_point terminal_at;
  std::optional<std::string> last_error_code, last_error;
};

struct archive_outcome {
  bool ok = true;
  std::string error;  // when !ok: a short, payload-free description
};
// Receives the batch, the deadline and a stop token; must be idempotent by id.
using archiver =
    std::function<archive_outcome(const std::vector<archived_message>& batch,
                                  std::chrono::steady_clock::time_point deadline, std::stop_token stop)>;

enum class operation { claim, extend, deliver, retry, dead, release, replay, prune, archive };
[[nodiscard]] std::string_view to_string(operation op) noexcept;

// Never carries payload, metadata, tokens or text.
struct event {
  operation op = operation::claim;
  bool ok = true;
  std::size_t count = 0;
  std::string message_id, topic;  // single-row transitions
  std::uint32_t claim_count = 0, failure_count = 0;
  std::chrono::microseconds duration{0};
  std::optional<errc> code;  // on failure
  std::string reason;        // on failure
};

struct store_options {
  outbox_config config;
  std::size_t max_claim_batch = 100;                                       // 1..1,000
  std::size_t max_admin_batch = 100;                                       // 1..1,000
  std::chrono::microseconds max_lease_duration = std::chrono::minutes(5);  // 1 ms..24 h
  std::chrono::microseconds max_retry_delay = std::chrono::hours(24);      // 1 s..30 days
  std::size_t max_error_bytes = 1024;                                      // 64..4,096
  std::chrono::milliseconds replay_lock_timeout{5000};                     // 100 ms..60 s
  std::chrono::milliseconds archive_deadline{30000};                       // 1 s..10 min
  std::function<void(const event&)> observer{};  // synchronous; exceptions swallowed
  std::function<bool(const replay_request&)> replay_authorizer{};
};

namespace detail {
class store_backend;
}

class store {
 public:
  // Validates options (reasons as §6), resolves the schema and checks the
  // recorded migration version. Never runs DDL. Errors: invalid_argument,
  // invalid_state (schema_version_mismatch, schema_too_new), unavailable.
  store(database& db, store_options options = {});
  ~store();
  store(const store&) = delete;
  store& operator=(const store&) = delete;

  // §6.1. Errors: invalid_argument (claim_owner_required, value_outside_bounds,
  // invalid_claim_limit, invalid_lease_duration, invalid_serialization),
  // unavailable, in_doubt, invalid_state (not_writable), database_error.
  std::vector<claimed_message> claim(const std::string& owner, std::size_t limit,
                                     std::chrono::microseconds lease_duration,
                                     serialization mode = serialization::none, const call_options& c = {});

  // §6.2: fenced; lease_lost when the lease expired or was replaced (nothing changes).
  time_point extend_lease(const lease_ref& ref, std::chrono::microseconds duration,
                          const call_options& c = {});
  // Up to 1,000 refs in one statement; nullopt = lost.
  std::vector<std::optional<time_point>> extend_leases(const std::vector<lease_ref>& refs,
                                                       std::chrono::microseconds duration,
                                                       const call_options& c = {});
  void mark_delivered(const lease_ref& ref, const call_options& c = {});
  // Runs fn inside the fenced transaction before T5 commits; an exception rolls back.
  // fn gets the store's own transaction (a spool::pg::tx or spool::sqlite::tx).
  void mark_delivered(const lease_ref& ref, const std::function<void(spool::tx&)>& fn,
                      const call_options& c = {});
  // T5 for up to 1,000 leases in one transaction (one round trip for the
  // locks and one statement on PostgreSQL), each fenced as mark_delivered.
  // Returns, per ref in order, true when it was delivered and false when its
  // lease had expired or been replaced (that row is left unchanged; the
  // others still commit). Errors: invalid_argument (value_outside_bounds for
  // 0 or > 1,000 refs, duplicate_ref, malformed refs), unavailable, in_doubt
  // (then re-read with check_lease), invalid_state (not_writable),
  // database_error. Thread-safe like every store call.
  std::vector<bool> mark_delivered_batch(const std::vector<lease_ref>& refs, const call_options& c = {});
  // The same, with fn run in that transaction after the fences and before
  // commit, given per ref whether it is being delivered (its lease held):
  // the caller's writes commit with exactly the rows it was told of. An
  // exception from fn rolls everything back and propagates.
  std::vector<bool> mark_delivered_batch(const std::vector<lease_ref>& refs,
                                         const std::function<void(spool::tx&, const std::vector<bool>&)>& fn,
                                         const call_options& c = {});
  // §6.2: T5 and, in the same transaction, a claim for the lease's owner of
  // the next eligible row of the delivered row's scope value under §6.1 (head
  // and, on PostgreSQL, horizon rules), so a hot key drains without poll
  // waits. The scope is the ordering key in by_ordering_key (an empty key has
  // none) and the topic in by_topic; mode none has no scope. Returns the new
  // claim, or nullopt when the scope has no eligible row (the delivery still
  // commits). Errors: as mark_delivered (lease_lost: nothing changed, nothing
  // claimed) and as claim (invalid_lease_duration, invalid_serialization).
  std::optional<claimed_message> mark_delivered_and_claim_next(
      const lease_ref& ref, std::chrono::microseconds lease_duration,
      serialization mode = serialization::by_ordering_key, const call_options& c = {});
  void retry(const lease_ref& ref, const retry_at& at, const failure& f, const call_options& c = {});
  void dead_letter(const lease_ref& ref, const failure& f, const call_options& c = {});
  void release_lease(const lease_ref& ref, const call_options& c = {});

  // What became of a lease, read without locking (§7 rule 7: an in_doubt
  // transition is resolved by re-reading its row). Errors: as backlog().
  lease_fate check_lease(const lease_ref& ref, const call_options& c = {});

  // §6.3.
  backlog_info backlog(const call_options& c = {});
  // Errors: invalid_argument (invalid_admin_limit, value_outside_bounds for
  // a topic, key or prefix over 255 bytes, an empty prefix or an age outside
  // 0..100 years, a malformed cursor), unavailable, database_error.
  inspect_page inspect(const inspect_query& q, const call_options& c = {});
  // One envelope by id, with payload and metadata; nullopt when no row has it.
  // Errors: invalid_argument (an id of 0 or over 255 bytes), invalid_state
  // (malformed_row), unavailable, database_error.
  std::optional<message_detail> get(const std::string& id, const call_options& c = {});
  // The replay audit of one id, newest first, at most `limit` rows
  // (1..max_admin_batch); it outlives the row's prune. Errors: as get, and
  // invalid_argument (invalid_admin_limit).
  std::vector<replay_record> replay_history(const std::string& id, std::size_t limit = 100,
                                            const call_options& c = {});
  // The horizon now (see horizon_info). Errors: unavailable, database_error.
  horizon_info horizon(const call_options& c = {});
  // §6.4. Errors: replay_conflict, unauthorized (replay_unauthorized),
  // invalid_argument, unavailable (lock wait over replay_lock_timeout).
  replay_result replay(const replay_request& r, const call_options& c = {});
  // §6.5: deleted ids.
  std::vector<std::string> prune_delivered(const cutoff& before, std::size_t limit,
                                           const call_options& c = {});
  std::vector<std::string> prune_dead(const cutoff& before, std::size_t limit, const call_options& c = {});
  std::vector<std::string> archive_and_prune_delivered(const cutoff& before, std::size_t limit,
                                                       const archiver& a, const call_options& c = {});
  std::vector<std::string> archive_and_prune_dead(const cutoff& before, std::size_t limit, const archiver& a,
                                                  const call_options& c = {});
  // §6.6: round trip plus writability; not_writable otherwise.
  void ping(const call_options& c = {});

  // Wake-ups for relays (§7 rule 8). PostgreSQL: subscribes to the process's
  // shared listener on config.notify_channel (starting it on first use);
  // fn(true) runs on the listener's thread for each notification naming
  // this store's table (writers with notify on send them at commit), and
  // fn(false) each time the listener (re)starts listening ("look now":
  // anything sent before may be lost). SQLite: fn(true) after commits of
  // spool::sqlite::tx in this process on the same database (other processes
  // are not heard). fn must be short and must not throw. Destroying the
  // handle unsubscribes; once that returns, fn is never called again.
  [[nodiscard]] std::shared_ptr<void> subscribe_changes(std::function<void(bool notified)> fn);

  // Opens up to `connections` pooled connections ahead of use (at most the
  // pool size), so that a relay starting does not pay a connect on each of
  // its first calls; relays call it as they start. Best effort: a connect
  // that fails is not an error here (the next call connects as usual).
  // Returns the connections the pool holds. Thread-safe.
  std::size_t warm(std::size_t connections) noexcept;

  [[nodiscard]] const store_options& options() const noexcept { return options_; }
  // Observer exceptions swallowed so far.
  [[nodiscard]] std::uint64_t observer_failures() const noexcept;

 private:
  struct state;
  void emit(event e) const;
  std::vector<bool> deliver_batch(const std::vector<lease_ref>& refs,
                                  const std::function<void(spool::tx&, const std::vector<bool>&)>* fn,
                                  const call_options& c);
  std::vector<std::string> prune(message_state s, const cutoff& before, std::size_t limit, const archiver* a,
                                 const call_options& c);
  store_options options_;
  std::unique_ptr<detail::store_backend> backend_;
  std::unique_ptr<state> state_;
};

}  // namespace spool::outbox
