// The message queue on SQLite (message-queue.md §8): every write runs in
// BEGIN IMMEDIATE, `now` is the host clock in whole seconds, bound once.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "common/embedded_sql.hpp"
#include "common/row_values.hpp"
#include "engine/database_impl.hpp"
#include "mq/store.hpp"
#include "spool/error.hpp"

namespace spool::mq::detail {

namespace {

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
using spool::detail::to_i64;
using spool::detail::to_opt_i64;
std::string_view q(const char* name) {
  return spool::detail::embedded_sql(fmt::format("sqlite/mq/queries/{}.sql", name));
}

using sqlite::detail::immediate_tx;

class sqlite_store final : public store {
 public:
  explicit sqlite_store(spool::detail::database_impl& db) : db_(db) {
    for (const char* name : {"claim", "quarantine_insert", "quarantine_delete", "ack", "release", "extend",
                             "publish", "metrics", "failed", "check_tables", "redrive_candidates",
                             "redrive_move", "redrive_audit", "redrive_delete"}) {
      sql_.emplace(name, q(name));
    }
  }

  void check_tables(const call_options& c) override {
    auto conn = db_.sqlite_pool().acquire(c);
    const auto rows = conn->query(sql_.at("check_tables"), {}, c);
    if (to_i64(rows.at(0).at(0)) != 2) {
      throw error(errc::invalid_state,
                  fmt::format("tables queue_messages and queue_messages_failed are missing in {}; run `spool "
                              "migrate --db URI` (or spool::mq::migrate) first",
                              db_.display()),
                  "schema_version_mismatch");
    }
  }

  std::vector<claimed_row> claim(const std::string& queue, const std::string& poll_uuid, std::size_t max,
                                 std::int64_t visibility_s, bool strict, const call_options& c) override {
    auto conn = db_.sqlite_pool().acquire(c);
    immediate_tx tx(*conn);
    const auto rows = conn->query(sql_.at("claim"), {queue, poll_uuid, static_cast<std::int64_t>(max),
                                                     visibility_s, std::int64_t{strict ? 1 : 0}, now_s()});
    tx.commit();
    std::vector<claimed_row> out;
    out.reserve(rows.size());
    for (const auto& r : rows) out.push_back({*r[0], *r[1], r[2], to_i64(r[3]), to_opt_i64(r[4])});
    return out;
  }

  bool quarantine(const std::string& queue, const std::string& id, const std::string& receipt,
                  const std::string& reason, const call_options& c) override {
    auto conn = db_.sqlite_pool().acquire(c);
    immediate_tx tx(*conn);
    conn->query(sql_.at("quarantine_insert"), {queue, id, receipt, reason, now_s()}, c);
    conn->query(sql_.at("quarantine_delete"), {queue, id, receipt}, c);
    const bool moved = conn->changes() > 0;
    tx.commit();
    return moved;
  }

  bool ack(const std::string& queue, const std::string& id, const std::string& receipt,
           const call_options& c) override {
    return run_affecting("ack", {queue, id, receipt}, c);
  }
  bool release(const std::string& queue, const std::string& id, const std::string& receipt,
               std::int64_t delay_s, const call_options& c) override {
    return run_affecting("release", {queue, id, receipt, delay_s, now_s()}, c);
  }
  bool extend(const std::string& queue, const std::string& id, const std::string& receipt,
              std::int64_t window_s, const call_options& c) override {
    return run_affecting("extend", {queue, id, receipt, window_s, now_s()}, c);
  }

  std::vector<bool> ack_batch(const std::string& queue, const std::vector<std::string>& ids,
                              const std::vector<std::string>& receipts, const call_options& c) override {
    auto conn = db_.sqlite_pool().acquire(c);
    immediate_tx tx(*conn);
    std::vector<bool> out(ids.size(), false);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      conn->query(sql_.at("ack"), {queue, ids[i], receipts[i]}, c);
      out[i] = conn->changes() > 0;
    }
    tx.commit();
    return out;
  }

  std::vector<bool> insert(const std::vector<encoded_row>& rows, std::int64_t delay_s,
                           const call_options& c) override {
    auto conn = db_.sqlite_pool().acquire(c);
    immediate_tx tx(*conn);
    auto out = sqlite_insert(*conn, rows, delay_s, c);
    tx.commit();
    db_.wake().raise();
    return out;
  }

  counts metrics(const std::string& queue, const call_options& c) override {
    auto conn = db_.sqlite_pool().acquire(c);
    const auto rows = conn->query(sql_.at("metrics"), {queue, now_s()}, c);
    const auto& r = rows.at(0);
    return {to_i64(r[0]), to_i64(r[1]), to_i64(r[2]), to_i64(r[3])};
  }

  std::vector<failed_message> failed(const std::string& queue, std::size_t limit,
                                     const call_options& c) override {
    auto conn = db_.sqlite_pool().acquire(c);
    const auto rows = conn->query(sql_.at("failed"), {queue, static_cast<std::int64_t>(limit)}, c);
    std::vector<failed_message> out;
    out.reserve(rows.size());
    for (const auto& r : rows) {
      out.push_back(
          {*r[0], r[1], *r[2], r[3].value_or(""), to_opt_i64(r[4]), to_opt_i64(r[5]), to_i64(r[6])});
    }
    return out;
  }

  bool healthy() override {
    try {
      auto conn = db_.sqlite_pool().acquire();
      conn->query("SELECT 1", {});
      return true;
    } catch (const error&) {
      return false;
    }
  }

  std::vector<std::pair<std::string, bool>> redrive(const std::string& queue,
                                                    const std::vector<std::string>& ids,
                                                    const std::string& actor, const std::string& reason,
                                                    bool dry_run, const call_options& c) override {
    auto conn = db_.sqlite_pool().acquire(c);
    immediate_tx tx(*conn);
    const std::int64_t now = now_s();
    std::vector<std::pair<std::string, bool>> out;
    for (const auto& r : conn->query(sql_.at("redrive_candidates"), {queue}, c)) {
      const std::string& id = *r[0];
      if (!ids.empty() && std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
      if (dry_run) {
        out.emplace_back(id, r[1] == "1");
        continue;
      }
      conn->query(sql_.at("redrive_move"), {queue, id, now}, c);
      const bool moved = conn->changes() > 0;
      if (moved) {
        conn->query(sql_.at("redrive_audit"), {queue, id, actor, reason, now}, c);
        conn->query(sql_.at("redrive_delete"), {queue, id}, c);
      }
      out.emplace_back(id, moved);
    }
    tx.commit();
    if (!dry_run) db_.wake().raise();
    return out;
  }

 private:
  bool run_affecting(const char* name, const std::vector<param>& params, const call_options& c) {
    auto conn = db_.sqlite_pool().acquire(c);
    conn->query(sql_.at(name), params, c);
    return conn->changes() > 0;
  }

  spool::detail::database_impl& db_;
  std::unordered_map<std::string, std::string_view> sql_;
};

}  // namespace

std::vector<bool> sqlite_insert(sqlite::detail::connection& conn, const std::vector<encoded_row>& rows,
                                std::int64_t delay_s, const call_options& c) {
  const auto sql = q("publish");
  const std::int64_t now = now_s();
  std::vector<bool> out(rows.size(), false);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    conn.query(sql,
               {*r.queue_name, r.id, r.group ? param(*r.group) : param(nullptr), r.payload, delay_s, now}, c);
    out[i] = conn.changes() > 0;
  }
  return out;
}

std::unique_ptr<store> make_sqlite_store(spool::detail::database_impl& db) {
  return std::make_unique<sqlite_store>(db);
}

}  // namespace spool::mq::detail
