// The message queue on PostgreSQL: every statement is one file under
// sql/postgres/mq/queries/, all values bound.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "common/embedded_sql.hpp"
#include "common/identifier.hpp"
#include "common/row_values.hpp"
#include "common/text/sql_template.hpp"
#include "engine/database_impl.hpp"
#include "engine/postgres/arrays.hpp"
#include "mq/store.hpp"
#include "spool/error.hpp"

namespace spool::mq::detail {

using pg::detail::intent;

std::string render_sql(std::string_view path, const std::string& schema) {
  return spool::detail::fill_placeholders(std::string(spool::detail::embedded_sql(path)),
                                          {{"{{s}}", spool::detail::schema_prefix(schema)}});
}

namespace {

using spool::detail::to_i64;
using spool::detail::to_opt_i64;

class postgres_store final : public store {
 public:
  postgres_store(spool::detail::database_impl& db, std::string schema, bool notify)
      : db_(db), schema_(std::move(schema)), notify_(notify) {
    for (const char* name : {"claim", "quarantine", "ack", "release", "extend", "ack_batch", "metrics",
                             "failed", "redrive", "redrive_preview"}) {
      sql_[name] = render_sql(fmt::format("postgres/mq/queries/{}.sql", name), schema_);
    }
  }

  void check_tables(const call_options& c) override {
    const std::string prefix = schema_.empty() ? "" : spool::detail::quote_identifier(schema_) + ".";
    auto conn = db_.pg_pool().acquire(c);
    const auto rows =
        conn->query(spool::detail::embedded_sql("postgres/mq/queries/check_tables.sql"),
                    {prefix + "queue_messages", prefix + "queue_messages_failed"}, intent::read, c);
    const char* names[] = {"queue_messages", "queue_messages_failed"};
    for (int i = 0; i < 2; ++i) {
      if (rows.at(0).at(i) != "t") {
        throw error(errc::invalid_state,
                    fmt::format("table {}{} does not exist in {}; run `spool migrate --db URI` (or "
                                "spool::mq::migrate) as the database owner",
                                prefix, names[i], db_.display()),
                    "schema_version_mismatch");
      }
    }
  }

  std::vector<claimed_row> claim(const std::string& queue, const std::string& poll_uuid, std::size_t max,
                                 std::int64_t visibility_s, bool strict, const call_options& c) override {
    std::string sql = sql_.at("claim");
    sql.replace(sql.find("{{limit}}"), 9, std::to_string(max));  // a number the queue validated
    auto conn = db_.pg_pool().acquire(c);
    const auto rows = conn->query(
        sql, {queue, poll_uuid, visibility_s, std::string(strict ? "true" : "false")}, intent::write, c);
    std::vector<claimed_row> out;
    out.reserve(rows.size());
    for (const auto& r : rows) {
      out.push_back({*r[0], *r[1], r[2], to_i64(r[3]), to_opt_i64(r[4])});
    }
    return out;
  }

  bool quarantine(const std::string& queue, const std::string& id, const std::string& receipt,
                  const std::string& reason, const call_options& c) override {
    auto conn = db_.pg_pool().acquire(c);
    auto res = conn->exec(sql_.at("quarantine"), {queue, id, receipt, reason}, intent::write, c);
    return affected(res.get()) > 0;
  }

  bool ack(const std::string& queue, const std::string& id, const std::string& receipt,
           const call_options& c) override {
    // No NOTIFY (issue 13): a claimed row is invisible, so its ack unblocks no
    // waiting consumer (only a strict-order successor, which the acking
    // consumer's next poll or the poll fallback claims), and NOTIFY's
    // commit-time lock would serialise every ack.
    return run_affecting("ack", {queue, id, receipt}, c);
  }
  bool release(const std::string& queue, const std::string& id, const std::string& receipt,
               std::int64_t delay_s, const call_options& c) override {
    // Only a zero delay can unblock rows right now (I10).
    return run_affecting("release", {queue, id, receipt, delay_s}, c, delay_s == 0 ? &queue : nullptr);
  }
  bool extend(const std::string& queue, const std::string& id, const std::string& receipt,
              std::int64_t window_s, const call_options& c) override {
    return run_affecting("extend", {queue, id, receipt, window_s}, c);
  }

  std::vector<bool> ack_batch(const std::string& queue, const std::vector<std::string>& ids,
                              const std::vector<std::string>& receipts, const call_options& c) override {
    std::vector<const std::string*> id_ptrs, receipt_ptrs;
    for (const auto& s : ids) id_ptrs.push_back(&s);
    for (const auto& s : receipts) receipt_ptrs.push_back(&s);
    auto conn = db_.pg_pool().acquire(c);
    const auto rows =
        pg::detail::rows_of(conn->exec(sql_.at("ack_batch"),
                                       {queue, pg::detail::binary_text_array(id_ptrs, conn->client_utf8()),
                                        pg::detail::binary_text_array(receipt_ptrs, conn->client_utf8())},
                                       intent::write, c, 0b110U)
                                .get());  // no NOTIFY, as for ack
    std::unordered_map<std::string, bool> deleted;
    for (const auto& r : rows) deleted[*r[0]] = true;
    std::vector<bool> out(receipts.size(), false);
    for (std::size_t i = 0; i < receipts.size(); ++i) {
      auto it = deleted.find(receipts[i]);
      if (it != deleted.end() && it->second) {
        out[i] = true;
        it->second = false;  // a receipt repeated in the batch acks once
      }
    }
    return out;
  }

  std::vector<bool> insert(const std::vector<encoded_row>& rows, std::int64_t delay_s,
                           const call_options& c) override {
    auto conn = db_.pg_pool().acquire(c);
    auto out = postgres_insert(*conn, schema_, rows, delay_s, notify_, c);
    db_.wake().raise();
    return out;
  }

  counts metrics(const std::string& queue, const call_options& c) override {
    auto conn = db_.pg_pool().acquire(c);
    const auto rows = conn->query(sql_.at("metrics"), {queue}, intent::read, c);
    const auto& r = rows.at(0);
    return {to_i64(r[0]), to_i64(r[1]), to_i64(r[2]), to_i64(r[3])};
  }

  std::vector<failed_message> failed(const std::string& queue, std::size_t limit,
                                     const call_options& c) override {
    auto conn = db_.pg_pool().acquire(c);
    const auto rows =
        conn->query(sql_.at("failed"), {queue, static_cast<std::int64_t>(limit)}, intent::read, c);
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
      auto conn = db_.pg_connect(2);
      conn->exec("SET statement_timeout = 2000", {}, intent::read);
      conn->exec("SELECT 1", {}, intent::read);
      return true;
    } catch (const error&) {
      return false;
    }
  }

  std::vector<std::pair<std::string, bool>> redrive(const std::string& queue,
                                                    const std::vector<std::string>& ids,
                                                    const std::string& actor, const std::string& reason,
                                                    bool dry_run, const call_options& c) override {
    std::vector<const std::string*> id_ptrs;
    id_ptrs.reserve(ids.size());
    for (const auto& s : ids) id_ptrs.push_back(&s);
    const param id_array = ids.empty() ? param(nullptr) : param(pg::detail::text_array(id_ptrs));
    auto conn = db_.pg_pool().acquire(c);
    const auto rows =
        dry_run ? conn->query(sql_.at("redrive_preview"), {queue, id_array}, intent::read, c)
                : conn->query(sql_.at("redrive"), {queue, id_array, actor, reason}, intent::write, c);
    std::vector<std::pair<std::string, bool>> out;
    out.reserve(rows.size());
    for (const auto& r : rows) out.emplace_back(*r[0], r[1] == "t");
    if (!dry_run) db_.wake().raise();
    return out;
  }

 private:
  static long long affected(const PGresult* res) {
    const char* n = PQcmdTuples(const_cast<PGresult*>(res));
    return (n && *n) ? std::stoll(n) : 0;
  }
  bool run_affecting(const char* name, const std::vector<param>& params, const call_options& c,
                     const std::string* notify_queue = nullptr) {
    auto conn = db_.pg_pool().acquire(c);
    std::vector<std::string> queues;
    if (notify_queue != nullptr) queues.push_back(*notify_queue);
    return affected(write(*conn, sql_.at(name), params, queues, c).get()) > 0;
  }

  // With notify on, runs the statement and a NOTIFY per queue in one
  // pipelined round trip, one implicit transaction, so the notification is
  // delivered only if the write commits (I10).
  pg::detail::result_ptr write(pg::detail::connection& conn, const std::string& sql,
                               const std::vector<param>& params,
                               const std::vector<std::string>& notify_queues, const call_options& c) {
    if (!notify_ || notify_queues.empty()) return conn.exec(sql, params, intent::write, c);
    std::vector<pg::detail::connection::statement> batch{{sql, params}};
    for (const auto& q : notify_queues) batch.push_back({"SELECT pg_notify('spool_mq', $1)", {q}});
    return std::move(conn.pipeline(batch, intent::write, c).front());
  }

  spool::detail::database_impl& db_;
  std::string schema_;
  bool notify_;
  std::unordered_map<std::string, std::string> sql_;
};

}  // namespace

namespace {

// Runs one publish statement and, with notify on, a NOTIFY per queue written,
// in one round trip: in the caller's transaction, or as one pipelined
// implicit transaction.
std::vector<row> run_insert(pg::detail::connection& conn, const std::string& sql,
                            const std::vector<param>& params, const std::vector<encoded_row>& rows,
                            bool notify, const call_options& c) {
  constexpr pg::detail::binary_mask arrays = 0b1111U;  // $1..$4 are binary_text_arrays
  if (!notify) return conn.query(sql, params, intent::write, c, arrays);
  std::vector<pg::detail::connection::statement> batch{{sql, params, arrays}};
  std::vector<std::string> notified;
  for (const auto& r : rows) {
    if (std::find(notified.begin(), notified.end(), *r.queue_name) == notified.end())
      notified.push_back(*r.queue_name);
  }
  for (const auto& q : notified) batch.push_back({"SELECT pg_notify('spool_mq', $1)", {q}});
  // In the caller's transaction too: there the pipeline runs inside its
  // block (with its BEGIN, when that has not gone out yet), and a failure
  // aborts the block as a failed statement would.
  return pg::detail::rows_of(conn.pipeline(batch, intent::write, c).front().get());
}

// publish.sql, with its ON CONFLICT or (fresh) without it.
std::string publish_sql(const std::string& schema, bool fresh) {
  return spool::detail::fill_placeholders(render_sql("postgres/mq/queries/publish.sql", schema),
                                          {{"{{fresh}}", fresh ? "--" : ""}});
}

bool keys_distinct(const std::vector<encoded_row>& rows) {
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const auto& r : rows) {
    if (!seen.emplace(*r.queue_name, r.id).second) return false;
  }
  return true;
}

}  // namespace

std::vector<bool> postgres_insert(pg::detail::connection& conn, const std::string& schema,
                                  const std::vector<encoded_row>& rows, std::int64_t delay_s, bool notify,
                                  const call_options& c) {
  std::vector<const std::string*> queues, ids, groups, payloads;
  queues.reserve(rows.size());
  for (const auto& r : rows) {
    queues.push_back(r.queue_name);
    ids.push_back(&r.id);
    groups.push_back(r.group ? &*r.group : nullptr);
    payloads.push_back(&r.payload);
  }
  const bool utf8 = conn.client_utf8();
  std::vector<param> params{
      pg::detail::binary_text_array(queues, utf8), pg::detail::binary_text_array(ids, utf8),
      pg::detail::binary_text_array(groups, utf8), pg::detail::binary_text_array(payloads, utf8), delay_s};
  // Ids are almost always new (the library makes UUIDv7s), so a batch in a
  // transaction of its own first goes in without ON CONFLICT; when an id is
  // taken after all (a retried publish, an application's own id), that
  // statement wrote nothing and the skipping one runs. In the caller's
  // transaction a failed statement would abort it, so there only the skipping
  // one runs.
  if (!conn.in_transaction() && keys_distinct(rows)) {
    try {
      (void)run_insert(conn, publish_sql(schema, true), params, rows, notify, c);
      return std::vector<bool>(rows.size(), true);
    } catch (const error& e) {
      if (!pg::detail::is_unique_violation(e)) throw;
    }
  }
  const auto inserted = run_insert(conn, publish_sql(schema, false), params, rows, notify, c);
  // Map the inserted (queue, id) keys back to the first input position that
  // carries them: within a batch the first occurrence wins.
  std::map<std::pair<std::string, std::string>, bool> fresh;
  for (const auto& r : inserted) fresh[{*r[0], *r[1]}] = true;
  std::vector<bool> out(rows.size(), false);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto it = fresh.find({*rows[i].queue_name, rows[i].id});
    if (it != fresh.end() && it->second) {
      out[i] = true;
      it->second = false;
    }
  }
  return out;
}

std::unique_ptr<store> make_postgres_store(spool::detail::database_impl& db, const std::string& schema,
                                           bool notify) {
  return std::make_unique<postgres_store>(db, schema, notify);
}

}  // namespace spool::mq::detail
