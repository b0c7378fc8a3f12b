// spool::outbox::writer: the checks that need no database (outbox.md §5),
// then the engine's one INSERT on the caller's transaction.
#include "spool/outbox/writer.hpp"

#include <fmt/format.h>

#include <set>
#include <unordered_set>

#include "engine/postgres/connection.hpp"
#include "outbox/store.hpp"
#include "spool/error.hpp"
#include "spool/tx.hpp"

namespace spool::outbox {

using pg::detail::intent;

writer::writer(database& db, writer_options options) : kind_(db.kind()), options_(std::move(options)) {
  validate(options_.envelope_limits);
  if (options_.max_batch_size < 1 || options_.max_batch_size > 5000) {
    throw error(errc::invalid_argument,
                fmt::format("max_batch_size = {} is outside 1..5000", options_.max_batch_size), "invalid_batch_limit");
  }
  auto n = detail::names_of(options_.config, kind_);
  detail::resolve_schema(n, db);  // SQLite's is always "main": no query
  schema_ = n.schema;
}

void writer::check_batch(const std::vector<envelope>& batch) const {
  if (batch.empty()) throw error(errc::invalid_argument, "the batch is empty", "empty_batch");
  if (batch.size() > options_.max_batch_size) {
    throw error(errc::invalid_argument,
                fmt::format("the batch has {} envelopes; max_batch_size is {}", batch.size(), options_.max_batch_size),
                "batch_too_large");
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    try {
      validate_for_insert(batch[i], options_.envelope_limits);
    } catch (const error& e) {
      throw error(e, fmt::format("envelope {}: {}", i, e.what()));
    }
  }
  std::unordered_set<std::string_view> ids, keys;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!ids.insert(batch[i].id).second) {
      throw error(errc::already_exists, fmt::format("envelope {}: its id repeats an earlier envelope's", i),
                  "duplicate_id");
    }
  }
  if (options_.on_idempotency_conflict == idempotency_policy::error) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].idempotency_key.empty() && !keys.insert(batch[i].idempotency_key).second) {
        throw error(errc::duplicate,
                    fmt::format("envelope {}: its idempotency key repeats an earlier envelope's", i),
                    "idempotency_conflict");
      }
    }
  }
}

namespace {

// Runs the engine half on the keepers and merges batch-internal repeats
// (skipped under `skip`) back in request order.
template <class Insert>
std::vector<insert_result> run_batch(const std::vector<envelope>& batch, Insert&& insert) {
  std::vector<const envelope*> keep;
  std::vector<int> slot(batch.size(), -1);
  std::unordered_set<std::string_view> keys;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i].idempotency_key.empty() && !keys.insert(batch[i].idempotency_key).second) continue;
    slot[i] = static_cast<int>(keep.size());
    keep.push_back(&batch[i]);
  }
  std::vector<insert_result> got;
  try {
    got = insert(keep);
  } catch (...) {
    detail::rethrow_translated();
  }
  std::vector<insert_result> out;
  out.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (slot[i] >= 0) {
      out.push_back(std::move(got[static_cast<std::size_t>(slot[i])]));
    } else {
      out.push_back({batch[i].id, insert_status::skipped, std::nullopt, std::nullopt});
    }
  }
  return out;
}

}  // namespace

std::vector<insert_result> writer::insert_on(const detail::exec_fn& exec, const std::vector<envelope>& batch) {
  detail::names n = detail::names_of(options_.config, kind_);
  n.schema = schema_;
  n.qualified = schema_ + "." + n.table;
  return run_batch(batch, [&](const std::vector<const envelope*>& keep) {
    return detail::insert_rows(kind_, exec, n, keep, options_);
  });
}

void writer::require_engine(engine k) const {
  if (k != kind_) {
    throw error(errc::invalid_argument, "this writer and the transaction passed to it are on different engines",
                "wrong_engine");
  }
}

std::vector<insert_result> writer::insert_batch(spool::tx& tx, const std::vector<envelope>& batch) {
  require_engine(tx.kind());
  detail::require_open(tx);
  check_batch(batch);
  return insert_on([&](const std::string& sql, const std::vector<param>& params) { return tx.exec(sql, params); },
                   batch);
}

std::vector<insert_result> writer::insert_batch(::pg_conn* raw, const std::vector<envelope>& batch) {
  require_engine(engine::postgres);
  detail::require_block(raw);
  check_batch(batch);
  pg::detail::connection conn(raw);  // borrowed: never closed, unnamed statements only
  return insert_on(
      [&](const std::string& sql, const std::vector<param>& params) { return conn.query(sql, params, intent::write); },
      batch);
}

std::vector<insert_result> writer::insert_batch(detail::foreign_pg_tx& tx, const std::vector<envelope>& batch) {
  require_engine(engine::postgres);
  check_batch(batch);
  return insert_on([&](const std::string& sql, const std::vector<param>& params) { return tx.exec(sql, params); },
                   batch);
}

insert_result writer::insert(spool::tx& tx, const envelope& e) { return insert_batch(tx, std::vector<envelope>{e}).at(0); }
insert_result writer::insert(::pg_conn* conn, const envelope& e) {
  return insert_batch(conn, std::vector<envelope>{e}).at(0);
}
insert_result writer::insert(detail::foreign_pg_tx& tx, const envelope& e) {
  return insert_batch(tx, std::vector<envelope>{e}).at(0);
}

}  // namespace spool::outbox
