// The op queue on SQLite (op-queue.md §4, §2.4): every write runs in BEGIN
// IMMEDIATE, "now" is always SQLite's own UTC clock, stored times are
// canonical UTC text, and an idle poll takes only a read lock.
#include <fmt/format.h>
#include <sqlite3.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/embedded_sql.hpp"
#include "common/row_values.hpp"
#include "engine/database_impl.hpp"
#include "migrate/migration_files.hpp"
#include "ops/store.hpp"
#include "ops/time.hpp"
#include "spool/error.hpp"

namespace spool::ops::detail {

namespace {

using sqlite::detail::immediate_tx;

using spool::detail::opt_text;
using spool::detail::to_i64;

std::string json_array(const std::vector<std::string>& values) { return nlohmann::json(values).dump(); }

// An SQLite date modifier for a signed duration, e.g. "+30 seconds" or "-1.500 seconds".
std::string modifier(std::chrono::milliseconds d) {
  const auto ms = d.count();
  const char sign = ms < 0 ? '-' : '+';
  const auto a = ms < 0 ? -ms : ms;
  return fmt::format("{}{}.{:03} seconds", sign, a / 1000, a % 1000);
}

// Delays on SQLite are whole seconds, rounded up: an op is never released early.
std::string delay_modifier(std::chrono::microseconds d) {
  const auto s = (d.count() + 999999) / 1000000;
  return fmt::format("+{} seconds", s < 0 ? 0 : s);
}

class sqlite_store final : public store {
 public:
  sqlite_store(spool::detail::pool<sqlite::detail::connection>& pool, spool::detail::wake_signal& wake,
               std::string path, database_options options, store_config config)
      : pool_(pool), wake_(wake), path_(std::move(path)), options_(options), config_(std::move(config)) {
    for (const char* name :
         {"insert",         "id_exists",     "holder",        "has_ready",       "claim",
          "fence_target",   "ack",           "fail",          "release",         "heartbeat",
          "status_of",      "cancel",        "retry",         "retry_holder",    "get",
          "list",           "list_after",    "stats",         "stats_by_type",   "throughput",
          "recover_orphans", "rescue",     "recover_legacy", "check_columns",   "check_indexes",
          "ledger_exists",  "ledger_version"}) {
      sql_[name] = ops_sql(engine::sqlite, name, config_);
    }
  }

  void check_schema(const call_options& call) override {
    auto conn = pool_.acquire(call);
    const std::string& table = config_.table;
    auto missing = [&](const std::string& what) {
      throw error(errc::invalid_state,
                  fmt::format("{} is missing; run `spool migrate --db URI{}` (or spool::ops::migrate) first",
                              what, table == "ops_queue" ? "" : " --ops-table " + table),
                  "schema_version_mismatch");
    };
    const auto cols = conn->query(sql_.at("check_columns"), {table}, call);
    if (cols.empty()) missing(fmt::format("table {}", table));
    for (const char* name : {"id", "type", "payload", "status", "priority", "attempts", "max_attempts",
                             "last_error", "enqueued_at", "started_at", "finished_at", "not_before",
                             "dedup_key", "lease_owner", "lease_token", "heartbeat_at"}) {
      bool found = false;
      for (const auto& r : cols) found = found || r[0] == name;
      if (!found) missing(fmt::format("column {}.{}", table, name));
    }
    const auto idx = conn->query(sql_.at("check_indexes"), {table}, call);
    for (const char* suffix :
         {"status_pri_at", "type_status", "finished_at", "dedup_pending", "running_heartbeat"}) {
      const std::string name = fmt::format("idx_{}_{}", table, suffix);
      bool found = false;
      for (const auto& r : idx) found = found || r[0] == name;
      if (!found) missing(fmt::format("index {}", name));
    }
    if (to_i64(conn->query(sql_.at("ledger_exists"), {}, call).at(0).at(0)) == 0) return;
    const auto r = conn->query(sql_.at("ledger_version"), {"main." + table}, call);
    const auto files = spool::detail::migration_files(engine::sqlite, "ops");
    const int newest = files.empty() ? 0 : files.back().version;
    if (r.at(0).at(0) && std::stoi(*r[0][0]) > newest) {
      throw error(
          errc::invalid_state,
          fmt::format("the ledger records ops/{} for {}, newer than this Spool (ops/{}); upgrade Spool",
                      *r[0][0], table, newest),
          "schema_too_new");
    }
  }

  std::vector<insert_outcome> insert(const std::vector<insert_item>& items,
                                     const call_options& call) override {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);
    auto out = sqlite_insert(*conn, config_, items, call);
    tx.commit();
    wake_.raise();
    return out;
  }

  std::vector<std::optional<std::string>> holders(const std::vector<std::string>& keys,
                                                  const call_options& call) override {
    auto conn = pool_.acquire(call);
    return sqlite_holders(*conn, config_, keys, call);
  }

  bool has_ready(const std::vector<std::string>& types, const call_options& call) override {
    auto conn = pool_.acquire(call);
    return conn->query(sql_.at("has_ready"), {json_array(types)}, call).at(0).at(0) == "1";
  }

  std::optional<row> claim(const std::vector<std::string>& types, const std::string& owner,
                           const std::string& token, const call_options& call) override {
    auto conn = pool_.acquire(call);
    const std::string filter = json_array(types);
    // Probe under a read lock first: an idle poll never takes the write lock.
    if (conn->query(sql_.at("has_ready"), {filter}, call).at(0).at(0) != "1") return std::nullopt;
    immediate_tx tx(*conn);
    auto rows = conn->query(sql_.at("claim"), {filter, owner, token}, call);
    tx.commit();
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
  }

  // One fenced outcome inside the caller's BEGIN IMMEDIATE.
  fence_result outcome_locked(sqlite::detail::connection& c, const fence_request& rq,
                              const call_options& call) {
    fence_result out;
    const auto target = c.query(sql_.at("fence_target"), {rq.id}, call);
    if (target.empty()) return out;
    out.found = true;
    out.status = target[0][0].value_or("");
    out.lease_token = target[0][1];
    if (out.status == "running" && out.lease_token == rq.token) {
      const param token = opt_text(rq.token);
      std::vector<row> rows;
      switch (rq.what) {
        case fence_request::kind::ack:
          rows = c.query(sql_.at("ack"), {rq.id, token}, call);
          break;
        case fence_request::kind::heartbeat:
          rows = c.query(sql_.at("heartbeat"), {rq.id, token}, call);
          break;
        case fence_request::kind::release:
          rows = c.query(sql_.at("release"), {rq.id, token, rq.message}, call);
          break;
        case fence_request::kind::fail: {
          const param at = rq.retry_at ? param(sqlite_time_ceil(*rq.retry_at)) : param(nullptr);
          const param delay =
              rq.retry_delay ? param(delay_modifier(*rq.retry_delay)) : param(std::string("+0 seconds"));
          rows = c.query(sql_.at("fail"),
                         {rq.id, token, rq.message, std::int64_t{rq.retry ? 1 : 0}, at, delay}, call);
          break;
        }
      }
      if (!rows.empty()) {
        out.applied = true;
        out.new_status = rows[0][0].value_or("");
      }
    }
    return out;
  }

  fence_result outcome(const fence_request& rq, const call_options& call) override {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);
    fence_result out = outcome_locked(*conn, rq, call);
    if (!out.found) return out;  // rolls back: nothing changed
    tx.commit();
    if (out.applied && out.new_status == "pending") wake_.raise();
    return out;
  }

  std::vector<fence_result> ack_many(const std::vector<fence_request>& acks,
                                     const call_options& call) override {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);  // one commit (one fsync) for the whole batch
    std::vector<fence_result> out;
    out.reserve(acks.size());
    for (const auto& rq : acks) out.push_back(outcome_locked(*conn, rq, call));
    tx.commit();
    return out;
  }

  std::vector<row> claim_many(const std::vector<std::string>& types, const std::string& owner,
                              const std::vector<std::string>& tokens, const call_options& call) override {
    auto conn = pool_.acquire(call);
    const std::string filter = json_array(types);
    // Probe under a read lock first: an idle poll never takes the write lock.
    if (conn->query(sql_.at("has_ready"), {filter}, call).at(0).at(0) != "1") return {};
    immediate_tx tx(*conn);  // the single writer: one claim after another, one commit
    std::vector<row> out;
    for (const auto& token : tokens) {
      auto rows = conn->query(sql_.at("claim"), {filter, owner, token}, call);
      if (rows.empty()) break;
      out.push_back(std::move(rows.front()));
    }
    tx.commit();
    return out;
  }

  std::vector<bool> heartbeat_batch(const std::vector<lease>& leases, const call_options& call) override {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);
    std::vector<bool> out(leases.size(), false);
    for (std::size_t i = 0; i < leases.size(); ++i) {
      out[i] = !conn->query(sql_.at("heartbeat"), {leases[i].id, leases[i].token}, call).empty();
    }
    tx.commit();
    return out;
  }

  status_change cancel(const std::string& id, const call_options& call) override {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);
    status_change out;
    const auto r = conn->query(sql_.at("status_of"), {id}, call);
    if (!r.empty()) {
      out.found = true;
      out.before = r[0][0].value_or("");
      if (out.before == "pending") {
        auto rows = conn->query(sql_.at("cancel"), {id}, call);
        if (!rows.empty()) out.after = std::move(rows.front());
      }
    }
    tx.commit();
    return out;
  }

  status_change retry(const std::string& id, bool reset, const call_options& call) override {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);
    status_change out;
    const auto r = conn->query(sql_.at("status_of"), {id}, call);
    if (!r.empty()) {
      out.found = true;
      out.before = r[0][0].value_or("");
      if (out.before == "failed") {
        if (r[0][1]) {
          const auto h = conn->query(sql_.at("retry_holder"), {id, *r[0][1]}, call);
          if (!h.empty()) {
            const std::string holder = h[0][0].value_or("");
            throw duplicate_op(
                fmt::format("cannot retry op \"{}\": its dedup key is held by pending op \"{}\"", id, holder),
                holder);
          }
        }
        auto rows = conn->query(sql_.at("retry"), {id, std::int64_t{reset ? 1 : 0}}, call);
        if (!rows.empty()) out.after = std::move(rows.front());
      }
    }
    tx.commit();
    if (out.after) wake_.raise();
    return out;
  }

  std::optional<row> get(const std::string& id, const call_options& call) override {
    auto conn = pool_.acquire(call);
    auto rows = conn->query(sql_.at("get"), {id}, call);
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
  }

  std::pair<std::vector<row>, std::int64_t> list(const std::string& status, std::int64_t limit,
                                                 std::int64_t offset, const call_options& call) override {
    auto conn = pool_.acquire(call);
    auto rows = conn->query(sql_.at("list"), {status, limit, offset}, call);
    std::pair<std::vector<row>, std::int64_t> out{{}, 0};
    for (auto& r : rows) {
      out.second = to_i64(r[0]);
      if (!r[1]) continue;
      out.first.push_back(row(r.begin() + 1, r.end()));
    }
    return out;
  }

  std::vector<row> list_after(const list_filter& filter, std::int64_t limit,
                              const std::optional<cursor_key>& after, const call_options& call) override {
    auto conn = pool_.acquire(call);
    return conn->query(sql_.at("list_after"),
                       {filter.status, limit, after ? param(after->enqueued_at) : param(nullptr),
                        after ? param(after->id) : param(nullptr), filter.type},
                       call);
  }

  queue_stats stats(const call_options& call) override {
    auto conn = pool_.acquire(call);
    const auto r = conn->query(sql_.at("stats"), {}, call).at(0);
    return {to_i64(r[0]), to_i64(r[1]), to_i64(r[2]), to_i64(r[3]), to_i64(r[4])};
  }

  std::vector<row> stats_by_type(const call_options& call) override {
    auto conn = pool_.acquire(call);
    return conn->query(sql_.at("stats_by_type"), {}, call);
  }

  std::vector<row> throughput(std::int64_t window_s, const call_options& call) override {
    auto conn = pool_.acquire(call);
    return conn->query(sql_.at("throughput"), {window_s}, call);
  }

  std::int64_t recover_orphans(std::chrono::seconds older_than, const call_options& call) override {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);
    const auto rows =
        conn->query(sql_.at("recover_orphans"), {fmt::format("-{} seconds", older_than.count())}, call);
    tx.commit();
    if (!rows.empty()) wake_.raise();
    return static_cast<std::int64_t>(rows.size());
  }

  std::vector<rescued_op> rescue(std::chrono::milliseconds lease_timeout, const call_options& call) override {
    return moved("rescue", -lease_timeout, call);
  }
  std::vector<rescued_op> recover_legacy(std::chrono::milliseconds older_than,
                                         const call_options& call) override {
    return moved("recover_legacy", -older_than, call);
  }

  std::int64_t repair_times(const call_options& call) override {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);
    try {
      conn->exec_script(render_ops_file("sqlite/ops/scripts/repair_times.sql", config_));
    } catch (const error& e) {
      if (e.constraint() != "spool_malformed_row") throw;
      const auto r = conn->query(
          "SELECT id, col, CAST(v AS TEXT) FROM temp.spool_ops_times WHERE c IS NULL LIMIT 1", {}, call);
      throw error(
          errc::invalid_state,
          fmt::format("repair-times: op \"{}\" holds {} = \"{}\", a timestamp in no known form; fix or "
                      "delete the row (nothing was changed)",
                      r.empty() ? "?" : r[0][0].value_or(""), r.empty() ? "?" : r[0][1].value_or(""),
                      r.empty() ? "?" : r[0][2].value_or("NULL")),
          "malformed_row");
    }
    const auto n = to_i64(conn->query("SELECT count(*) FROM temp.spool_ops_times", {}, call).at(0).at(0));
    conn->exec_script("DROP TABLE temp.spool_ops_time_check; DROP TABLE temp.spool_ops_times;");
    tx.commit();
    if (n > 0) wake_.raise();
    return n;
  }

  // In-process writes (the wake generation) and commits by any other
  // connection or process (PRAGMA data_version of a connection of our own).
  std::uint64_t change_marker(const call_options& call) override {
    std::uint64_t version = 0;
    {
      std::lock_guard lock(detector_mutex_);
      try {
        if (path_.empty()) {
          auto conn = pool_.acquire(call);
          version = std::stoull(conn->query("PRAGMA data_version", {}, call).at(0).at(0).value_or("0"));
        } else {
          if (!detector_) {
            detector_ = std::make_unique<sqlite::detail::connection>(path_, options_.sqlite_busy_timeout,
                                                                     options_.sqlite_sync);
          }
          version = std::stoull(detector_->query("PRAGMA data_version", {}, call).at(0).at(0).value_or("0"));
        }
      } catch (const error&) {
        // A detector that cannot read only loses the cross-process hint; polling remains.
      }
    }
    return wake_.generation() * 0x9e3779b97f4a7c15ull + version;
  }

  void wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout, std::stop_token stop,
                       const std::function<bool()>& closed) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::stop_callback on_stop(stop, [this] { wake_.poke(); });
    for (;;) {
      if (stop.stop_requested() || closed() || change_marker({}) != seen) return;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return;
      const auto gen = wake_.generation();
      wake_.wait_until(gen, std::min(deadline, now + std::chrono::milliseconds(50)),
                       [&] { return stop.stop_requested() || closed(); });
    }
  }

  // SQLite has no NOTIFY: pools watch change_marker() instead.
  std::shared_ptr<void> subscribe(std::function<void(const std::string*)>) override { return {}; }

  void close() override {
    std::lock_guard lock(detector_mutex_);
    detector_.reset();
  }

 private:
  std::vector<rescued_op> moved(const char* name, std::chrono::milliseconds d, const call_options& call) {
    auto conn = pool_.acquire(call);
    immediate_tx tx(*conn);
    const auto rows = conn->query(sql_.at(name), {modifier(d)}, call);
    tx.commit();
    std::vector<rescued_op> out;
    for (const auto& r : rows) out.push_back({*r[0], r[1].value_or(""), parse_status(r[2].value_or(""))});
    if (!out.empty()) wake_.raise();
    return out;
  }

  spool::detail::pool<sqlite::detail::connection>& pool_;
  spool::detail::wake_signal& wake_;
  std::string path_;
  database_options options_;
  store_config config_;
  std::unordered_map<std::string, std::string> sql_;
  std::mutex detector_mutex_;
  std::unique_ptr<sqlite::detail::connection> detector_;
};

}  // namespace

std::vector<insert_outcome> sqlite_insert(sqlite::detail::connection& conn, const store_config& config,
                                          const std::vector<insert_item>& items, const call_options& call) {
  const std::string insert = ops_sql(engine::sqlite, "insert", config);
  const std::string exists = ops_sql(engine::sqlite, "id_exists", config);
  std::vector<insert_outcome> out(items.size(), insert_outcome::key_held);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    // Checked in the write transaction (SQLite has one writer), so the insert
    // below cannot meet the id.
    if (it.caller_id && !conn.query(exists, {it.id}, call).empty()) {
      out[i] = insert_outcome::id_taken;
      continue;
    }
    conn.query(insert,
               {it.id, it.type, it.payload, std::int64_t{it.priority}, std::int64_t{it.max_attempts},
                it.not_before ? param(sqlite_time_ceil(*it.not_before)) : param(nullptr),
                it.delay ? param(delay_modifier(*it.delay)) : param(nullptr), opt_text(it.dedup_key)},
               call);
    if (conn.changes() > 0) out[i] = insert_outcome::inserted;
  }
  return out;
}

std::vector<std::optional<std::string>> sqlite_holders(sqlite::detail::connection& conn,
                                                       const store_config& config,
                                                       const std::vector<std::string>& keys,
                                                       const call_options& call) {
  const std::string sql = ops_sql(engine::sqlite, "holder", config);
  std::vector<std::optional<std::string>> out(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto rows = conn.query(sql, {keys[i]}, call);
    if (!rows.empty()) out[i] = rows[0][0];
  }
  return out;
}

std::unique_ptr<store> make_sqlite_store(spool::detail::pool<sqlite::detail::connection>& pool,
                                         spool::detail::wake_signal& wake, std::string path,
                                         database_options options, store_config config) {
  return std::make_unique<sqlite_store>(pool, wake, std::move(path), options, std::move(config));
}

}  // namespace spool::ops::detail
