// The outbox store on PostgreSQL: every statement is one file under
// sql/postgres/outbox/queries/, all values bound, times as epoch µs.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "common/call_guard.hpp"
#include "common/uuid.hpp"
#include "engine/database_impl.hpp"
#include "engine/postgres/arrays.hpp"
#include "engine/postgres/tx_impl.hpp"
#include "outbox/store.hpp"
#include "outbox/store_postgres_txn.hpp"
#include "spool/error.hpp"
#include "spool/pg.hpp"

namespace spool::outbox::detail {

namespace {

using pg::detail::intent;
using conn_t = pg::detail::connection;

std::string array_of(const std::vector<std::string>& v) {
  std::vector<const std::string*> p;
  p.reserve(v.size());
  for (const auto& s : v) p.push_back(&s);
  return pg::detail::text_array(p);
}

claimed_message to_claim(full_row&& r) {
  claimed_message out;
  out.owner = r.lease_owner.value_or("");
  out.ref = {r.message.id, r.lease_token.value_or("")};
  out.leased_until = r.leased_until.value_or(time_point{});
  out.message = std::move(r.message);
  return out;
}

// A row a claim returned as 'dead': its SQL found the row undecodable and
// dead-lettered it (column 9 is state, as in decode_row).
bool dead_lettered_by_claim(const row& r) { return r.size() > 9 && r[9] && *r[9] == "dead"; }

class postgres_backend final : public store_backend {
 public:
  postgres_backend(database db, names n) : db_(std::move(db)), n_(std::move(n)) {
    for (const char* f : {"claim",
                          "claim_by_key",
                          "claim_by_topic",
                          "claim_undecodable",
                          "lock",
                          "lock_many",
                          "extend",
                          "deliver",
                          "deliver_many",
                          "deliver_scope",
                          "claim_next_by_key",
                          "claim_next_by_topic",
                          "retry",
                          "dead_letter",
                          "release",
                          "backlog",
                          "inspect",
                          "get",
                          "replay_history",
                          "horizon",
                          "replay_lock",
                          "replay_apply",
                          "prune_delivered",
                          "prune_dead",
                          "archive_select_delivered",
                          "archive_select_dead",
                          "archive_delete",
                          "lease_state",
                          "cutoff",
                          "ping",
                          "schema_version"}) {
      sql_[f] = render(engine::postgres, f, n_);
    }
  }

  void check_schema(int expected, const call_options& c) override {
    auto conn = impl().pg_pool().acquire(c);
    const auto rows = conn->query(sql_.at("schema_version"), {n_.qualified}, intent::read, c);
    int recorded = 0;
    for (const auto& r : rows) recorded = std::max(recorded, std::stoi(*r[0]));
    if (recorded > expected) {
      throw error(errc::invalid_state,
                  fmt::format("outbox {} is at version {}, newer than this Spool knows ({})", n_.qualified,
                              recorded, expected),
                  "schema_too_new");
    }
    if (recorded < expected) {
      throw error(errc::invalid_state,
                  fmt::format("outbox {} is at version {}, this Spool needs {}; run `spool migrate`",
                              n_.qualified, recorded, expected),
                  "schema_version_mismatch");
    }
  }

  std::vector<claimed_message> claim(const std::string& owner, std::size_t limit, std::int64_t lease_us,
                                     serialization mode, const call_options& c) override {
    const char* file = mode == serialization::none              ? "claim"
                       : mode == serialization::by_ordering_key ? "claim_by_key"
                                                                : "claim_by_topic";
    spool::detail::check_call(c, "outbox claim");
    const auto results =
        one_trip_tx(impl(), {{sql_.at(file), {owner, static_cast<std::int64_t>(limit), lease_us}}},
                    mode == serialization::none, c);
    const auto rows = pg::detail::rows_of(results.at(0).get());
    std::vector<claimed_message> out;
    std::vector<std::string> undecodable;
    for (const auto& r : rows) {
      if (dead_lettered_by_claim(r)) continue;
      try {
        out.push_back(to_claim(decode_row(r)));
      } catch (const error&) {
        undecodable.push_back(r.at(2).value_or(""));
      }
    }
    // The claim itself dead-letters every row its SQL finds undecodable
    // (fragments/decodable.sql), in its own transaction. Should the decoder
    // still refuse a row the SQL passed (the two drifted apart), that row is
    // dead-lettered right after; should that fail, its lease expires and a
    // later claim tries again.
    if (!undecodable.empty()) {
      txn tx(impl(), c);
      for (const auto& id : undecodable) tx.query(sql_.at("claim_undecodable"), {id});
      tx.commit();
    }
    std::sort(out.begin(), out.end(), [](const claimed_message& a, const claimed_message& b) {
      return std::tie(*a.message.available_at, *a.message.pos) <
             std::tie(*b.message.available_at, *b.message.pos);
    });
    return out;
  }

  std::vector<std::optional<time_point>> extend(const std::vector<lease_ref>& refs, std::int64_t lease_us,
                                                const call_options& c) override {
    std::vector<std::string> ids, tokens;
    for (const auto& r : refs) {
      ids.push_back(r.id);
      tokens.push_back(r.token);
    }
    txn tx(impl(), c);
    tx.query(sql_.at("lock_many"), {array_of(ids)});
    const auto rows = tx.query(sql_.at("extend"), {array_of(ids), array_of(tokens), lease_us});
    tx.commit();
    std::unordered_map<std::string, time_point> got;
    for (const auto& r : rows) got[*r[0]] = from_micros(std::stoll(*r[1]));
    std::vector<std::optional<time_point>> out;
    for (const auto& r : refs) {
      auto it = got.find(r.id);
      out.push_back(it == got.end() ? std::nullopt : std::optional<time_point>(it->second));
    }
    return out;
  }

  std::optional<transition_row> fenced(const lease_ref& ref, const transition& t,
                                       const std::function<void(spool::tx&)>* fn,
                                       const call_options& c) override {
    spool::detail::check_call(c, "outbox transition");
    conn_t::statement step{"", {}};
    switch (t.what) {
      case transition::kind::deliver:
        step = {sql_.at("deliver"), {ref.id, ref.token}};
        break;
      case transition::kind::retry:
        step = {sql_.at("retry"),
                {ref.id, ref.token, t.delay_us ? param(*t.delay_us) : param(nullptr),
                 t.at_us ? param(*t.at_us) : param(nullptr), t.code, t.message}};
        break;
      case transition::kind::dead:
        step = {sql_.at("dead_letter"), {ref.id, ref.token, t.code, t.message}};
        break;
      case transition::kind::release:
        step = {sql_.at("release"), {ref.id, ref.token}};
        break;
    }
    const conn_t::statement lock{sql_.at("lock"), {ref.id}};  // now is read after this lock
    std::vector<row> rows;
    if (fn == nullptr || !*fn) {
      // Nothing runs between the fence and the commit: one round trip. A
      // lost lease updates no row, so the transaction commits nothing.
      rows = pg::detail::rows_of(one_trip_tx(impl(), {lock, step}, true, c).at(1).get());
      if (rows.empty()) return std::nullopt;
    } else {
      pg::tx tx(db_);
      auto& conn = pg::detail::connection_of(tx, "the outbox store");
      conn.query(lock.sql, lock.params, intent::write, c);
      rows = conn.query(step.sql, step.params, intent::write, c);
      if (rows.empty()) return std::nullopt;  // tx rolls back: nothing changed
      (*fn)(tx);
      tx.commit();
    }
    return transition_row{rows[0][0].value_or(""), static_cast<std::uint32_t>(std::stoul(*rows[0][1])),
                          static_cast<std::uint32_t>(std::stoul(*rows[0][2]))};
  }

  std::vector<std::optional<transition_row>> deliver_many(const std::vector<lease_ref>& refs,
                                                          const batch_fn* fn,
                                                          const call_options& c) override {
    std::vector<std::string> ids, tokens;
    for (const auto& r : refs) {
      ids.push_back(r.id);
      tokens.push_back(r.token);
    }
    spool::detail::check_call(c, "outbox transition");
    const std::string id_array = array_of(ids);
    const auto tokens_array = array_of(tokens);
    std::vector<row> rows;
    std::optional<pg::tx> tx;
    if (fn == nullptr || !*fn) {
      // Locks in id order first (no deadlock with other batches), then T5:
      // one round trip.
      const auto results = one_trip_tx(
          impl(), {{sql_.at("lock_many"), {id_array}}, {sql_.at("deliver_many"), {id_array, tokens_array}}},
          true, c);
      rows = pg::detail::rows_of(results.at(1).get());
    } else {
      tx.emplace(db_);
      auto& conn = pg::detail::connection_of(*tx, "the outbox store");
      conn.query(sql_.at("lock_many"), {id_array}, intent::write, c);
      rows = conn.query(sql_.at("deliver_many"), {id_array, tokens_array}, intent::write, c);
    }
    std::unordered_map<std::string, transition_row> got;
    for (const auto& r : rows) {
      got.emplace(*r[0], transition_row{r[1].value_or(""), static_cast<std::uint32_t>(std::stoul(*r[2])),
                                        static_cast<std::uint32_t>(std::stoul(*r[3]))});
    }
    std::vector<std::optional<transition_row>> out;
    out.reserve(refs.size());
    std::vector<bool> held;
    held.reserve(refs.size());
    for (const auto& r : refs) {
      auto it = got.find(r.id);
      out.push_back(it == got.end() ? std::nullopt : std::optional<transition_row>(it->second));
      held.push_back(it != got.end());
    }
    if (tx) {
      (*fn)(*tx, held);
      tx->commit();
    }
    return out;
  }

  std::optional<deliver_next_outcome> deliver_and_claim_next(const lease_ref& ref, std::int64_t lease_us,
                                                             serialization mode,
                                                             const call_options& c) override {
    spool::detail::check_call(c, "outbox transition");
    txn tx(impl(), c);                    // READ COMMITTED, as claim
    tx.query(sql_.at("lock"), {ref.id});  // now is read after this lock
    const auto scope = tx.query(sql_.at("deliver_scope"), {ref.id}, intent::read);
    const auto rows = tx.query(sql_.at("deliver"), {ref.id, ref.token});
    if (rows.empty() || scope.empty()) return std::nullopt;  // rolls back: nothing changed
    deliver_next_outcome out;
    out.delivered =
        transition_row{rows[0][0].value_or(""), static_cast<std::uint32_t>(std::stoul(*rows[0][1])),
                       static_cast<std::uint32_t>(std::stoul(*rows[0][2]))};
    const std::string key = scope[0][0].value_or(""), topic = scope[0][1].value_or(""),
                      owner = scope[0][2].value_or("");
    const bool by_key = mode == serialization::by_ordering_key && !key.empty();
    if (by_key || mode == serialization::by_topic) {
      const auto next = tx.query(sql_.at(by_key ? "claim_next_by_key" : "claim_next_by_topic"),
                                 {owner, std::int64_t{1}, lease_us, by_key ? key : topic});
      for (const auto& r : next) {
        if (dead_lettered_by_claim(r)) continue;
        try {
          out.next = to_claim(decode_row(r));
        } catch (const error&) {
          tx.query(sql_.at("claim_undecodable"), {r.at(2).value_or("")});
        }
      }
    }
    tx.commit();
    return out;
  }

  backlog_info backlog(const call_options& c) override {
    txn tx(impl(), c);
    const auto r = tx.query(sql_.at("backlog"), {}, intent::read).at(0);  // read only: rolled back
    backlog_info b;
    b.pending = std::stoll(*r[0]);
    b.leased = std::stoll(*r[1]);
    b.expired_leases = std::stoll(*r[2]);
    b.dead = std::stoll(*r[3]);
    if (r[4]) {
      b.oldest_pending_created_at = from_micros(std::stoll(*r[4]));
      b.oldest_pending_age = std::max(std::chrono::microseconds(0),
                                      std::chrono::microseconds(std::stoll(*r[5]) - std::stoll(*r[4])));
    }
    return b;
  }

  std::vector<message_summary> inspect(const inspect_query& q,
                                       const std::optional<std::pair<std::int64_t, std::string>>& before,
                                       const call_options& c) override {
    std::vector<param> params{
        q.state ? param(std::string(to_string(*q.state))) : param(nullptr),
        q.topic ? param(*q.topic) : param(nullptr), before ? param(before->first) : param(nullptr),
        before ? param(before->second) : param(std::string()), static_cast<std::int64_t>(q.limit)};
    for (auto& p : inspect_filters(q)) params.push_back(std::move(p));
    txn tx(impl(), c);
    return summaries_of(tx.query(sql_.at("inspect"), params, intent::read));  // read only: rolled back
  }

  std::optional<row> get(const std::string& id, const call_options& c) override {
    auto conn = impl().pg_pool().acquire(c);
    auto rows = conn->query(sql_.at("get"), {id}, intent::read, c);
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
  }

  std::vector<row> replay_history(const std::string& id, std::size_t limit, const call_options& c) override {
    auto conn = impl().pg_pool().acquire(c);
    return conn->query(sql_.at("replay_history"), {n_.qualified, id, static_cast<std::int64_t>(limit)},
                       intent::read, c);
  }

  horizon_info horizon(const call_options& c) override {
    auto conn = impl().pg_pool().acquire(c);
    const auto r = conn->query(sql_.at("horizon"), {}, intent::read, c).at(0);
    horizon_info h;
    h.applies = true;
    h.horizon_xid = std::stoull(r.at(0).value_or("0"));
    h.next_xid = std::stoull(r.at(1).value_or("0"));
    h.held = std::stoll(r.at(2).value_or("0"));
    if (r.at(3)) h.oldest_transaction_pid = std::stoi(*r[3]);
    if (r.at(4))
      h.oldest_transaction_age = std::chrono::microseconds(std::max<std::int64_t>(0, std::stoll(*r[4])));
    return h;
  }

  replay_outcome replay(const replay_request& r, const std::string& replay_id, std::int64_t lock_timeout_ms,
                        const call_options& c) override {
    txn tx(impl(), c);
    tx.set_local("lock_timeout", lock_timeout_ms);
    const auto locked = tx.query(sql_.at("replay_lock"), {array_of(r.ids)});
    replay_outcome out;
    if (replay_conflicts(r.ids, locked, out)) return out;  // rolls back
    const auto rows =
        tx.query(sql_.at("replay_apply"), {array_of(r.ids), replay_id, n_.qualified, r.requested_by, r.reason,
                                           r.available_at ? param(micros(*r.available_at)) : param(nullptr)});
    std::unordered_map<std::string, message_state> prev;
    for (const auto& row : rows) prev[*row[0]] = parse_message_state(*row[1]);
    tx.commit();
    for (const auto& id : r.ids) out.previous.emplace_back(id, prev.at(id));
    return out;
  }

  std::vector<std::string> prune(message_state s, const cutoff& before, std::size_t limit,
                                 const std::function<void(const std::vector<archived_message>&)>* archive,
                                 std::int64_t tx_timeout_ms, const call_options& c) override {
    const std::string st(to_string(s));
    txn tx(impl(), c);
    const std::int64_t cut = cutoff_us(tx, before);
    if (archive == nullptr) {
      const auto rows = tx.query(sql_.at("prune_" + st), {cut, static_cast<std::int64_t>(limit)});
      tx.commit();
      std::vector<std::string> out;
      for (const auto& r : rows) out.push_back(*r[0]);
      return out;
    }
    // The open transaction is bounded just above the archiver's deadline.
    tx.set_local("idle_in_transaction_session_timeout", tx_timeout_ms);
    tx.set_local("statement_timeout", tx_timeout_ms);
    const auto rows = tx.query(sql_.at("archive_select_" + st), {cut, static_cast<std::int64_t>(limit)});
    if (rows.empty()) {
      tx.commit();
      return {};
    }
    std::vector<archived_message> batch;
    std::vector<std::string> seqs;
    for (const auto& r : rows) {
      auto f = decode_row(r);
      seqs.push_back(std::to_string(f.message.pos->seq));
      archived_message a;
      a.state = f.state;
      a.terminal_at = s == message_state::delivered ? f.delivered_at.value_or(time_point{})
                                                    : f.dead_lettered_at.value_or(time_point{});
      a.last_error_code = f.last_error_code;
      a.last_error = f.last_error;
      a.message = std::move(f.message);
      batch.push_back(std::move(a));
    }
    (*archive)(batch);  // throws to roll back: nothing deleted
    const auto deleted = tx.query(sql_.at("archive_delete"), {array_of(seqs), st});
    tx.commit();
    std::vector<std::string> out;
    for (const auto& r : deleted) out.push_back(*r[0]);
    return out;
  }

  std::optional<std::pair<message_state, bool>> lease_state(const lease_ref& ref,
                                                            const call_options& c) override {
    auto conn = impl().pg_pool().acquire(c);
    const auto r = conn->query(sql_.at("lease_state"), {ref.id, ref.token}, intent::read, c);
    if (r.empty()) return std::nullopt;
    return std::pair{parse_message_state(r[0].at(0).value_or("")), r[0].at(1) == "t"};
  }

  void ping(const call_options& c) override {
    auto conn = impl().pg_pool().acquire(c);
    const auto r = conn->query(sql_.at("ping"), {}, intent::read, c);
    if (r.at(0).at(0) != "t") {
      throw error(errc::invalid_state, fmt::format("{} is read-only or in recovery", db_.display_name()),
                  "not_writable");
    }
  }

  // NOTIFY through the process's shared listener; the payload names the table.
  std::shared_ptr<void> subscribe_changes(const std::string& channel, std::function<void(bool)> fn) override {
    return impl().subscribe(channel, [fn = std::move(fn), table = n_.qualified](const std::string* payload) {
      if (payload == nullptr) {
        fn(false);
      } else if (*payload == table) {
        fn(true);
      }
    });
  }

 private:
  spool::detail::database_impl& impl() { return db_.impl(); }

  std::int64_t cutoff_us(txn& tx, const cutoff& before) {
    if (before.instant()) return micros(*before.instant());
    return std::stoll(*tx.query(sql_.at("cutoff"), {before.age()->count()}, intent::read).at(0).at(0));
  }

  std::unordered_map<std::string, std::string> sql_;
  database db_;
  names n_;
};

}  // namespace

std::unique_ptr<store_backend> make_postgres_backend(database db, names n) {
  return std::make_unique<postgres_backend>(std::move(db), std::move(n));
}

}  // namespace spool::outbox::detail
