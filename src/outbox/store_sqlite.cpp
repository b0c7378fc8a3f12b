// The outbox store on SQLite: every write in BEGIN IMMEDIATE (the single
// writer), "now" is the host clock read after the write lock is held, times
// are epoch µs. Every statement is one file under sql/sqlite/outbox/queries/.
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/call_guard.hpp"
#include "common/uuid.hpp"
#include "engine/database_impl.hpp"
#include "engine/sqlite/tx_impl.hpp"
#include "outbox/commit_watcher.hpp"
#include "outbox/store.hpp"
#include "spool/error.hpp"
#include "spool/sqlite.hpp"

namespace spool::outbox::detail {

namespace {

using sqlite::detail::immediate_tx;

std::string json_array(const std::vector<std::string>& v) { return nlohmann::json(v).dump(); }

class sqlite_backend final : public store_backend {
 public:
  sqlite_backend(database db, names n) : db_(std::move(db)), n_(std::move(n)) {
    for (const char* f : {"claim_candidates",
                          "claim_candidates_by_key",
                          "claim_candidates_by_topic",
                          "claim_row",
                          "claim_undecodable",
                          "extend",
                          "deliver",
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
                          "replay_lock",
                          "replay_audit",
                          "replay_apply",
                          "prune_delivered",
                          "prune_dead",
                          "archive_select_delivered",
                          "archive_select_dead",
                          "archive_delete",
                          "lease_state",
                          "ping",
                          "schema_version"}) {
      sql_[f] = render(engine::sqlite, f, n_);
    }
  }

  void check_schema(int expected, const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    std::vector<row> rows;
    try {
      rows = conn->query(sql_.at("schema_version"), {n_.qualified}, c);
    } catch (const error& e) {
      if (e.reason() != "schema_version_mismatch") throw;
    }
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
    const char* file = mode == serialization::none              ? "claim_candidates"
                       : mode == serialization::by_ordering_key ? "claim_candidates_by_key"
                                                                : "claim_candidates_by_topic";
    auto conn = impl().sqlite_pool().acquire(c);
    spool::detail::check_call(c, "outbox claim");
    immediate_tx tx(*conn);
    const std::int64_t now = host_now_us();  // after the write lock
    const auto seqs = conn->query(sql_.at(file), {now, static_cast<std::int64_t>(limit)}, c);
    std::vector<claimed_message> out;
    for (const auto& s : seqs) {
      const auto rows = conn->query(sql_.at("claim_row"),
                                    {std::stoll(*s[0]), owner, spool::detail::uuid_v4(), now, lease_us}, c);
      if (rows.empty()) continue;
      try {
        auto f = decode_row(rows[0]);
        claimed_message m;
        m.owner = f.lease_owner.value_or("");
        m.ref = {f.message.id, f.lease_token.value_or("")};
        m.leased_until = f.leased_until.value_or(time_point{});
        m.message = std::move(f.message);
        out.push_back(std::move(m));
      } catch (const error&) {
        conn->query(sql_.at("claim_undecodable"), {rows[0].at(2).value_or(""), now}, c);
      }
    }
    tx.commit();
    return out;
  }

  std::vector<std::optional<time_point>> extend(const std::vector<lease_ref>& refs, std::int64_t lease_us,
                                                const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    spool::detail::check_call(c, "outbox extend");
    immediate_tx tx(*conn);
    const std::int64_t now = host_now_us();
    std::vector<std::optional<time_point>> out;
    for (const auto& r : refs) {
      const auto rows = conn->query(sql_.at("extend"), {r.id, r.token, now, lease_us}, c);
      out.push_back(rows.empty() ? std::nullopt
                                 : std::optional<time_point>(from_micros(std::stoll(*rows[0][0]))));
    }
    tx.commit();
    return out;
  }

  std::optional<transition_row> fenced(const lease_ref& ref, const transition& t,
                                       const std::function<void(spool::tx&)>* fn,
                                       const call_options& c) override {
    spool::detail::check_call(c, "outbox transition");
    sqlite::tx tx(db_);  // BEGIN IMMEDIATE: the row (and the database) is locked
    auto& conn = sqlite::detail::connection_of(tx, "the outbox store");
    const std::int64_t now = host_now_us();  // read after the lock
    std::vector<row> rows;
    switch (t.what) {
      case transition::kind::deliver:
        rows = conn.query(sql_.at("deliver"), {ref.id, ref.token, now}, c);
        break;
      case transition::kind::retry: {
        const std::int64_t at = t.delay_us ? now + *t.delay_us : std::max(*t.at_us, now);
        rows = conn.query(sql_.at("retry"), {ref.id, ref.token, now, at, t.code, t.message}, c);
        break;
      }
      case transition::kind::dead:
        rows = conn.query(sql_.at("dead_letter"), {ref.id, ref.token, now, t.code, t.message}, c);
        break;
      case transition::kind::release:
        rows = conn.query(sql_.at("release"), {ref.id, ref.token, now}, c);
        break;
    }
    if (rows.empty()) return std::nullopt;
    if (fn != nullptr && *fn) (*fn)(tx);
    tx.commit();
    return transition_row{rows[0][0].value_or(""), static_cast<std::uint32_t>(std::stoul(*rows[0][1])),
                          static_cast<std::uint32_t>(std::stoul(*rows[0][2]))};
  }

  std::vector<std::optional<transition_row>> deliver_many(const std::vector<lease_ref>& refs, const batch_fn* fn,
                                                          const call_options& c) override {
    spool::detail::check_call(c, "outbox transition");
    // Under the single writer's lock every row is locked; now is read after it.
    const auto deliver_all = [&](auto& conn) {
      const std::int64_t now = host_now_us();
      std::vector<std::optional<transition_row>> out;
      out.reserve(refs.size());
      for (const auto& r : refs) {
        const auto rows = conn.query(sql_.at("deliver"), {r.id, r.token, now}, c);
        if (rows.empty()) {
          out.emplace_back(std::nullopt);
        } else {
          out.emplace_back(transition_row{rows[0][0].value_or(""),
                                          static_cast<std::uint32_t>(std::stoul(*rows[0][1])),
                                          static_cast<std::uint32_t>(std::stoul(*rows[0][2]))});
        }
      }
      return out;
    };
    if (fn == nullptr || !*fn) {
      auto conn = impl().sqlite_pool().acquire(c);
      immediate_tx tx(*conn);
      auto out = deliver_all(*conn);
      tx.commit();
      return out;
    }
    sqlite::tx tx(db_);  // BEGIN IMMEDIATE, as the caller's transactions
    auto out = deliver_all(sqlite::detail::connection_of(tx, "the outbox store"));
    std::vector<bool> held;
    held.reserve(out.size());
    for (const auto& r : out) held.push_back(r.has_value());
    (*fn)(tx, held);
    tx.commit();
    return out;
  }

  std::optional<deliver_next_outcome> deliver_and_claim_next(const lease_ref& ref, std::int64_t lease_us,
                                                             serialization mode,
                                                             const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    spool::detail::check_call(c, "outbox transition");
    immediate_tx tx(*conn);                  // the single writer: the row is locked
    const std::int64_t now = host_now_us();  // read after the lock
    const auto scope = conn->query(sql_.at("deliver_scope"), {ref.id}, c);
    const auto rows = conn->query(sql_.at("deliver"), {ref.id, ref.token, now}, c);
    if (rows.empty() || scope.empty()) return std::nullopt;  // rolls back: nothing changed
    deliver_next_outcome out;
    out.delivered =
        transition_row{rows[0][0].value_or(""), static_cast<std::uint32_t>(std::stoul(*rows[0][1])),
                       static_cast<std::uint32_t>(std::stoul(*rows[0][2]))};
    const std::string key = scope[0][0].value_or(""), topic = scope[0][1].value_or(""),
                      owner = scope[0][2].value_or("");
    const bool by_key = mode == serialization::by_ordering_key && !key.empty();
    if (by_key || mode == serialization::by_topic) {
      const auto seqs = conn->query(sql_.at(by_key ? "claim_next_by_key" : "claim_next_by_topic"),
                                    {now, std::int64_t{1}, by_key ? key : topic}, c);
      for (const auto& s : seqs) {
        const auto claimed = conn->query(
            sql_.at("claim_row"), {std::stoll(*s[0]), owner, spool::detail::uuid_v4(), now, lease_us}, c);
        if (claimed.empty()) continue;
        try {
          auto f = decode_row(claimed[0]);
          claimed_message m;
          m.owner = f.lease_owner.value_or("");
          m.ref = {f.message.id, f.lease_token.value_or("")};
          m.leased_until = f.leased_until.value_or(time_point{});
          m.message = std::move(f.message);
          out.next = std::move(m);
        } catch (const error&) {
          conn->query(sql_.at("claim_undecodable"), {claimed[0].at(2).value_or(""), now}, c);
        }
      }
    }
    tx.commit();
    return out;
  }

  backlog_info backlog(const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    const auto r = conn->query(sql_.at("backlog"), {host_now_us()}, c).at(0);
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
    std::vector<param> params{q.state ? param(std::string(to_string(*q.state))) : param(nullptr),
                              q.topic ? param(*q.topic) : param(nullptr),
                              before ? param(before->first) : param(nullptr),
                              before ? param(before->second) : param(std::string()),
                              static_cast<std::int64_t>(q.limit)};
    for (auto& p : inspect_filters(q)) params.push_back(std::move(p));
    params.emplace_back(host_now_us());
    auto conn = impl().sqlite_pool().acquire(c);
    return summaries_of(conn->query(sql_.at("inspect"), params, c));
  }

  std::optional<row> get(const std::string& id, const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    auto rows = conn->query(sql_.at("get"), {id}, c);
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
  }

  std::vector<row> replay_history(const std::string& id, std::size_t limit, const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    return conn->query(sql_.at("replay_history"), {n_.qualified, id, static_cast<std::int64_t>(limit)}, c);
  }

  // Engine difference (docs/ARCHITECTURE.md): SQLite's one writer commits in
  // position order, so no transaction horizon holds ordered claims back.
  horizon_info horizon(const call_options&) override { return {}; }

  replay_outcome replay(const replay_request& r, const std::string& replay_id, std::int64_t,
                        const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    spool::detail::check_call(c, "outbox replay");
    immediate_tx tx(*conn);
    const std::int64_t now = host_now_us();
    const std::string ids = json_array(r.ids);
    const auto locked = conn->query(sql_.at("replay_lock"), {ids}, c);
    replay_outcome out;
    if (replay_conflicts(r.ids, locked, out)) return out;  // rolls back
    const std::int64_t avail = r.available_at ? micros(*r.available_at) : now;
    conn->query(sql_.at("replay_audit"), {ids, replay_id, n_.qualified, r.requested_by, r.reason, now, avail},
                c);
    conn->query(sql_.at("replay_apply"), {ids, now, avail}, c);
    tx.commit();
    std::unordered_map<std::string, message_state> prev;
    for (const auto& row : locked) prev[*row[0]] = parse_message_state(*row[1]);
    for (const auto& id : r.ids) out.previous.emplace_back(id, prev.at(id));
    return out;
  }

  std::vector<std::string> prune(message_state s, const cutoff& before, std::size_t limit,
                                 const std::function<void(const std::vector<archived_message>&)>* archive,
                                 std::int64_t, const call_options& c) override {
    const std::string st(to_string(s));
    auto conn = impl().sqlite_pool().acquire(c);
    spool::detail::check_call(c, "outbox prune");
    immediate_tx tx(*conn);
    const std::int64_t now = host_now_us();
    const std::int64_t cut = before.instant() ? micros(*before.instant()) : now - before.age()->count();
    std::vector<std::string> out;
    if (archive == nullptr) {
      for (const auto& r : conn->query(sql_.at("prune_" + st), {cut, static_cast<std::int64_t>(limit)}, c)) {
        out.push_back(*r[0]);
      }
      tx.commit();
      return out;
    }
    const auto rows =
        conn->query(sql_.at("archive_select_" + st), {cut, static_cast<std::int64_t>(limit)}, c);
    if (rows.empty()) {
      tx.commit();
      return {};
    }
    std::vector<archived_message> batch;
    std::vector<std::int64_t> seqs;
    for (const auto& r : rows) {
      auto f = decode_row(r);
      seqs.push_back(f.message.pos->seq);
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
    for (const auto& r : conn->query(sql_.at("archive_delete"), {nlohmann::json(seqs).dump(), st}, c)) {
      out.push_back(*r[0]);
    }
    tx.commit();
    return out;
  }

  std::optional<std::pair<message_state, bool>> lease_state(const lease_ref& ref,
                                                            const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    const auto r = conn->query(sql_.at("lease_state"), {ref.id, ref.token}, c);
    if (r.empty()) return std::nullopt;
    return std::pair{parse_message_state(r[0].at(0).value_or("")), r[0].at(1) == "1"};
  }

  void ping(const call_options& c) override {
    auto conn = impl().sqlite_pool().acquire(c);
    const auto r = conn->query(sql_.at("ping"), {}, c);
    const bool query_only = !r.empty() && r[0][0] == "1";
    if (query_only || sqlite3_db_readonly_main(*conn)) {
      throw error(errc::invalid_state, fmt::format("{} is read-only", db_.display_name()), "not_writable");
    }
  }

  std::shared_ptr<void> subscribe_changes(const std::string&, std::function<void(bool)> fn) override {
    return std::make_shared<commit_watcher>(db_, std::move(fn));
  }

 private:
  spool::detail::database_impl& impl() { return db_.impl(); }
  static bool sqlite3_db_readonly_main(sqlite::detail::connection& conn) {
    return ::sqlite3_db_readonly(conn.native(), "main") == 1;
  }

  std::unordered_map<std::string, std::string> sql_;
  database db_;
  names n_;
};

}  // namespace

std::unique_ptr<store_backend> make_sqlite_backend(database db, names n) {
  return std::make_unique<sqlite_backend>(std::move(db), std::move(n));
}

}  // namespace spool::outbox::detail
