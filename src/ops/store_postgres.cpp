// The op queue on PostgreSQL: every statement is one file under
// sql/postgres/ops/queries/, all values bound, identifiers only from
// validated configuration (op-queue.md §4).
#include "ops/store_postgres.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "common/embedded_sql.hpp"
#include "common/identifier.hpp"
#include "common/row_values.hpp"
#include "engine/database_impl.hpp"
#include "engine/postgres/arrays.hpp"
#include "migrate/migration_files.hpp"
#include "ops/store.hpp"
#include "ops/time.hpp"
#include "spool/error.hpp"

namespace spool::ops::detail {

using pg::detail::intent;

namespace {
// The values as the engine's array encoders take them (nullptr: NULL).
std::vector<const std::string*> pointers(const std::vector<std::string>& values) {
  std::vector<const std::string*> ptrs;
  ptrs.reserve(values.size());
  for (const auto& v : values) ptrs.push_back(&v);
  return ptrs;
}
std::vector<const std::string*> pointers(const std::vector<std::optional<std::string>>& values) {
  std::vector<const std::string*> ptrs;
  ptrs.reserve(values.size());
  for (const auto& v : values) ptrs.push_back(v ? &*v : nullptr);
  return ptrs;
}
}  // namespace

std::string text_array(const std::vector<std::string>& values) {
  return pg::detail::text_array(pointers(values));
}

std::string text_array(const std::vector<std::optional<std::string>>& values) {
  return pg::detail::text_array(pointers(values));
}

std::string binary_text_array(const std::vector<std::string>& values, bool utf8) {
  return pg::detail::binary_text_array(pointers(values), utf8);
}

std::string binary_text_array(const std::vector<std::optional<std::string>>& values, bool utf8) {
  return pg::detail::binary_text_array(pointers(values), utf8);
}

param boolean(bool b) { return std::string(b ? "true" : "false"); }

namespace {

using spool::detail::opt_text;
using spool::detail::to_i64;

using pg::detail::is_unique_violation;

class postgres_store final : public store {
 public:
  postgres_store(spool::detail::database_impl& db, store_config config)
      : db_(db), config_(std::move(config)) {
    // (enqueue.sql is rendered per call, with or without its ON CONFLICT.)
    for (const char* name : {"existing_ids",
                             "holders",
                             "has_ready",
                             "dequeue",
                             "dequeue_many",
                             "ack",
                             "ack_applied",
                             "ack_many",
                             "fail",
                             "release",
                             "heartbeat",
                             "heartbeat_batch",
                             "cancel",
                             "retry",
                             "retry_holder",
                             "get",
                             "list",
                             "list_after",
                             "stats",
                             "stats_by_type",
                             "throughput",
                             "recover_orphans",
                             "rescue",
                             "recover_legacy",
                             "check_columns",
                             "check_indexes",
                             "ledger_version"}) {
      sql_[name] = ops_sql(engine::postgres, name, config_);
    }
  }

  void check_schema(const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    const std::string& schema = config_.schema;
    const std::string& table = config_.table;
    const std::string qualified = schema + "." + table;
    auto missing = [&](const std::string& what) {
      throw error(
          errc::invalid_state,
          fmt::format("{} is missing in {}; run `spool migrate --db URI{}{}` (or spool::ops::migrate) as the "
                      "database owner",
                      what, db_.display(), table == "ops_queue" ? "" : " --ops-table " + table,
                      fmt::format(" --schema {}", schema)),
          "schema_version_mismatch");
    };
    const auto cols = conn->query(sql_.at("check_columns"), {schema, table}, intent::read, call);
    if (cols.empty()) missing(fmt::format("table {}", qualified));
    std::map<std::string, std::string> types;
    for (const auto& r : cols) types[*r[0]] = r[1].value_or("");
    static const std::pair<const char*, const char*> expected[] = {
        {"id", "text"},
        {"type", "text"},
        {"payload", "jsonb"},
        {"status", "text"},
        {"priority", "integer"},
        {"attempts", "integer"},
        {"max_attempts", "integer"},
        {"last_error", "text"},
        {"enqueued_at", "timestamp with time zone"},
        {"started_at", "timestamp with time zone"},
        {"finished_at", "timestamp with time zone"},
        {"not_before", "timestamp with time zone"},
        {"dedup_key", "text"},
        {"lease_owner", "text"},
        {"lease_token", "text"},
        {"heartbeat_at", "timestamp with time zone"},
    };
    for (const auto& [name, type] : expected) {
      auto it = types.find(name);
      if (it == types.end()) missing(fmt::format("column {}.{}", qualified, name));
      if (it->second != type) {
        throw error(errc::invalid_state,
                    fmt::format("column {}.{} has type {}, expected {}", qualified, name, it->second, type),
                    "schema_version_mismatch");
      }
    }
    std::vector<std::string> indexes;
    for (const auto& r : conn->query(sql_.at("check_indexes"), {schema, table}, intent::read, call))
      indexes.push_back(*r[0]);
    for (const char* suffix :
         {"status_pri_at", "type_status", "finished_at", "dedup_pending", "running_heartbeat"}) {
      const std::string name = fmt::format("idx_{}_{}", table, suffix);
      if (std::find(indexes.begin(), indexes.end(), name) == indexes.end())
        missing(fmt::format("index {}.{}", schema, name));
    }
    check_ledger(*conn, qualified, call);
  }

  std::vector<insert_outcome> insert(const std::vector<insert_item>& items,
                                     const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    auto out = postgres_insert(*conn, config_, items, call);
    db_.wake().raise();
    return out;
  }

  std::vector<std::optional<std::string>> holders(const std::vector<std::string>& keys,
                                                  const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    return postgres_holders(*conn, config_, keys, call);
  }

  bool has_ready(const std::vector<std::string>& types, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    return conn->query(sql_.at("has_ready"), {text_array(types)}, intent::read, call).at(0).at(0) == "t";
  }

  std::optional<row> claim(const std::vector<std::string>& types, const std::string& owner,
                           const std::string& token, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    auto rows = conn->query(sql_.at("dequeue"), {text_array(types), owner, token}, intent::write, call);
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
  }

  std::vector<row> claim_many(const std::vector<std::string>& types, const std::string& owner,
                              const std::vector<std::string>& tokens, const call_options& call) override {
    std::string sql = sql_.at("dequeue_many");
    sql.replace(sql.find("{{limit}}"), 9, std::to_string(tokens.size()));  // a count the queue validated
    auto conn = db_.pg_pool().acquire(call);
    auto rows = conn->query(sql, {text_array(types), owner, text_array(tokens)}, intent::write, call);
    std::sort(rows.begin(), rows.end(),
              [](const row& a, const row& b) { return std::stoll(*a.back()) < std::stoll(*b.back()); });
    for (auto& r : rows) r.pop_back();  // n: claim order, restored
    return rows;
  }

  std::vector<fence_result> ack_many(const std::vector<fence_request>& acks,
                                     const call_options& call) override {
    // The ids are distinct (queue::ack_batch checks) and every one carries a
    // token. ack_applied.sql acks what it can in one statement, in id
    // order; ack_many.sql then reports each op it did not ack as found
    // (usually none).
    std::vector<std::size_t> order(acks.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return acks[a].id < acks[b].id; });
    std::unordered_map<std::string_view, std::size_t> position;
    for (std::size_t i = 0; i < acks.size(); ++i) position.emplace(acks[i].id, i);
    std::vector<fence_result> out(acks.size());
    auto conn = db_.pg_pool().acquire(call);
    const auto send = [&](const char* statement, const std::vector<std::size_t>& which) {
      std::vector<std::optional<std::string>> ids, tokens;
      ids.reserve(which.size());
      tokens.reserve(which.size());
      for (const std::size_t i : which) {
        ids.emplace_back(acks[i].id);
        tokens.emplace_back(acks[i].token);
      }
      return conn->query(sql_.at(statement),
                         {binary_text_array(ids, conn->client_utf8()), binary_text_array(tokens, conn->client_utf8())},
                         intent::write, call, 0b11U);
    };
    for (const auto& r : send("ack_applied", order)) {
      const auto it = position.find(r.at(0).value_or(""));
      if (it == position.end()) continue;
      fence_result& f = out[it->second];
      f.found = true;
      f.status = "running";  // as the fence found it
      f.lease_token = acks[it->second].token;
      f.applied = true;
      f.new_status = "done";
    }
    std::vector<std::size_t> rest;
    for (const std::size_t i : order) {
      if (!out[i].applied) rest.push_back(i);
    }
    if (rest.empty()) return out;
    for (const auto& r : send("ack_many", rest)) {
      const auto it = position.find(r.at(0).value_or(""));
      if (it == position.end()) continue;
      fence_result& f = out[it->second];
      f.found = true;
      f.status = r[1].value_or("");
      f.lease_token = r[2];
      f.applied = r[3].has_value();
      f.new_status = r[3].value_or("");
    }
    return out;
  }

  fence_result outcome(const fence_request& rq, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    const param token = opt_text(rq.token);
    std::vector<row> rows;
    switch (rq.what) {
      case fence_request::kind::ack:
        rows = conn->query(sql_.at("ack"), {rq.id, token}, intent::write, call);
        break;
      case fence_request::kind::heartbeat:
        rows = conn->query(sql_.at("heartbeat"), {rq.id, token}, intent::write, call);
        break;
      case fence_request::kind::release:
        rows = conn->query(sql_.at("release"),
                           {rq.id, token, rq.message, boolean(config_.notify), config_.channel},
                           intent::write, call);
        break;
      case fence_request::kind::fail: {
        const param at = rq.retry_at ? param(pg_time(*rq.retry_at)) : param(nullptr);
        const param delay =
            rq.retry_delay ? param(static_cast<std::int64_t>(rq.retry_delay->count())) : param(nullptr);
        rows = conn->query(sql_.at("fail"),
                           {rq.id, token, rq.message, boolean(rq.retry), at, delay, boolean(config_.notify),
                            config_.channel},
                           intent::write, call);
        break;
      }
    }
    fence_result out;
    if (rows.empty()) return out;
    const auto& r = rows.front();
    out.found = true;
    out.status = r[0].value_or("");
    out.lease_token = r[1];
    out.applied = r[2].has_value();
    out.new_status = r[2].value_or("");
    if (out.applied && out.new_status == "pending") db_.wake().raise();
    return out;
  }

  std::vector<bool> heartbeat_batch(const std::vector<lease>& leases, const call_options& call) override {
    std::vector<std::string> ids, tokens;
    for (const auto& l : leases) {
      ids.push_back(l.id);
      tokens.push_back(l.token);
    }
    auto conn = db_.pg_pool().acquire(call);
    const auto rows =
        conn->query(sql_.at("heartbeat_batch"), {text_array(ids), text_array(tokens)}, intent::write, call);
    std::vector<bool> out(leases.size(), false);
    for (const auto& r : rows) {
      for (std::size_t i = 0; i < leases.size(); ++i) {
        if (leases[i].id == *r[0] && leases[i].token == r[1].value_or("")) out[i] = true;
      }
    }
    return out;
  }

  status_change cancel(const std::string& id, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    return change(conn->query(sql_.at("cancel"), {id}, intent::write, call), 1);
  }

  status_change retry(const std::string& id, bool reset, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    try {
      auto out =
          change(conn->query(sql_.at("retry"), {id, boolean(reset), boolean(config_.notify), config_.channel},
                             intent::write, call),
                 2);
      if (out.after) db_.wake().raise();
      return out;
    } catch (const error& e) {
      if (!is_unique_violation(e)) throw;
      const auto rows = conn->query(sql_.at("retry_holder"), {id}, intent::read, call);
      const std::string holder = rows.empty() ? std::string() : rows[0][0].value_or("");
      throw duplicate_op(
          fmt::format("cannot retry op \"{}\": its dedup key is held by pending op \"{}\"", id, holder),
          holder);
    }
  }

  std::optional<row> get(const std::string& id, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    auto rows = conn->query(sql_.at("get"), {id}, intent::read, call);
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
  }

  std::pair<std::vector<row>, std::int64_t> list(const std::string& status, std::int64_t limit,
                                                 std::int64_t offset, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    auto rows = conn->query(sql_.at("list"), {status, limit, offset}, intent::read, call);
    std::pair<std::vector<row>, std::int64_t> out{{}, 0};
    for (auto& r : rows) {
      out.second = to_i64(r[0]);
      if (!r[1]) continue;  // the empty page's one row
      out.first.push_back(row(r.begin() + 1, r.end()));
    }
    return out;
  }

  std::vector<row> list_after(const list_filter& filter, std::int64_t limit,
                              const std::optional<cursor_key>& after, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    return conn->query(sql_.at("list_after"),
                       {filter.status, limit, after ? param(after->enqueued_at) : param(nullptr),
                        after ? param(after->id) : param(nullptr), filter.type},
                       intent::read, call);
  }

  queue_stats stats(const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    const auto r = conn->query(sql_.at("stats"), {}, intent::read, call).at(0);
    return {to_i64(r[0]), to_i64(r[1]), to_i64(r[2]), to_i64(r[3]), to_i64(r[4])};
  }

  std::vector<row> stats_by_type(const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    return conn->query(sql_.at("stats_by_type"), {}, intent::read, call);
  }

  std::vector<row> throughput(std::int64_t window_s, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    return conn->query(sql_.at("throughput"), {window_s}, intent::read, call);
  }

  std::int64_t recover_orphans(std::chrono::seconds older_than, const call_options& call) override {
    auto conn = db_.pg_pool().acquire(call);
    const auto r = conn->query(sql_.at("recover_orphans"),
                               {static_cast<std::int64_t>(older_than.count()) * 1000000,
                                boolean(config_.notify), config_.channel},
                               intent::write, call)
                       .at(0);
    const auto n = to_i64(r[0]);
    if (n > 0) db_.wake().raise();
    return n;
  }

  std::vector<rescued_op> rescue(std::chrono::milliseconds lease_timeout, const call_options& call) override {
    return moved("rescue", lease_timeout, call);
  }
  std::vector<rescued_op> recover_legacy(std::chrono::milliseconds older_than,
                                         const call_options& call) override {
    return moved("recover_legacy", older_than, call);
  }

  // timestamptz columns cannot hold a malformed time.
  std::int64_t repair_times(const call_options&) override { return 0; }

  std::uint64_t change_marker(const call_options&) override { return db_.wake().generation(); }

  void wait_for_change(std::uint64_t seen, std::chrono::milliseconds timeout, std::stop_token stop,
                       const std::function<bool()>& closed) override {
    if (config_.notify) db_.listen(config_.channel);
    auto& wake = db_.wake();
    std::stop_callback on_stop(stop, [&wake] { wake.poke(); });
    wake.wait_until(seen, std::chrono::steady_clock::now() + timeout,
                    [&] { return stop.stop_requested() || closed(); });
  }

  std::shared_ptr<void> subscribe(std::function<void(const std::string*)> fn) override {
    if (!config_.notify) return {};
    return db_.subscribe(config_.channel, std::move(fn));
  }

  void close() override {}

 private:
  void check_ledger(pg::detail::connection& conn, const std::string& qualified, const call_options& call) {
    const auto exists = conn.query(
        "SELECT to_regclass($1) IS NOT NULL",
        {spool::detail::quote_identifier(config_.schema) + ".spool_schema_migrations"}, intent::read, call);
    if (exists.at(0).at(0) != "t") return;
    const auto r = conn.query(sql_.at("ledger_version"), {qualified}, intent::read, call);
    const auto files = spool::detail::migration_files(engine::postgres, "ops");
    const int newest = files.empty() ? 0 : files.back().version;
    if (r.at(0).at(0) && std::stoi(*r[0][0]) > newest) {
      throw error(
          errc::invalid_state,
          fmt::format("the ledger records ops/{} for {}, newer than this Spool (ops/{}); upgrade Spool",
                      *r[0][0], qualified, newest),
          "schema_too_new");
    }
  }

  static status_change change(const std::vector<row>& rows, std::size_t first) {
    status_change out;
    if (rows.empty()) return out;
    const auto& r = rows.front();
    out.found = true;
    out.before = r[0].value_or("");
    if (r.size() > first && r[first])
      out.after = row(r.begin() + static_cast<std::ptrdiff_t>(first), r.end());
    return out;
  }

  std::vector<rescued_op> moved(const char* name, std::chrono::milliseconds d, const call_options& call) {
    auto conn = db_.pg_pool().acquire(call);
    const auto rows =
        conn->query(sql_.at(name),
                    {static_cast<std::int64_t>(d.count()) * 1000, boolean(config_.notify), config_.channel},
                    intent::write, call);
    std::vector<rescued_op> out;
    for (const auto& r : rows) out.push_back({*r[0], r[1].value_or(""), parse_status(r[2].value_or(""))});
    if (!out.empty()) db_.wake().raise();
    return out;
  }

  spool::detail::database_impl& db_;
  store_config config_;
  std::unordered_map<std::string, std::string> sql_;
};

}  // namespace

std::string resolve_pg_schema(spool::detail::database_impl& db, const std::string& configured,
                              const call_options& call) {
  if (!configured.empty()) return configured;
  auto conn = db.pg_pool().acquire(call);
  const auto r = conn->query("SELECT current_schema()", {}, intent::read, call);
  if (!r.at(0).at(0)) {
    throw error(errc::invalid_state,
                "the connection has no current schema (empty search_path); configure a schema");
  }
  return *r[0][0];
}

std::unique_ptr<store> make_postgres_store(spool::detail::database_impl& db, store_config config) {
  return std::make_unique<postgres_store>(db, std::move(config));
}

}  // namespace spool::ops::detail
