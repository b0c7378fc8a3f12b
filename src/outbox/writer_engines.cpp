// The writer's engine halves: one INSERT, classification of the rows it left
// out, and the compensating DELETE on an error outcome (outbox.md §5).
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include <libpq-fe.h>

#include "engine/postgres/arrays.hpp"
#include "engine/postgres/connection.hpp"
#include "engine/postgres/tx_impl.hpp"
#include "engine/sqlite/tx_impl.hpp"
#include "outbox/store.hpp"
#include "outbox/text.hpp"
#include "spool/error.hpp"

namespace spool::outbox::detail {

namespace {

const char* status_name(PGTransactionStatusType s) {
  switch (s) {
    case PQTRANS_IDLE: return "idle (no transaction block)";
    case PQTRANS_ACTIVE: return "active (a command is in progress)";
    case PQTRANS_INTRANS: return "idle in a transaction block";
    case PQTRANS_INERROR: return "idle in a failed transaction block";
    default: return "unknown (connection bad)";
  }
}

struct returned {
  time_point available_at, created_at;
};

// Builds the results, or — on an error outcome — undoes the inserted rows
// and throws. existing: ids of left-out rows held by a stored row.
std::vector<insert_result> classify(const std::vector<const envelope*>& batch,
                                    const std::unordered_map<std::string, returned>& inserted,
                                    const std::set<std::string>& existing, idempotency_policy policy,
                                    const std::function<void()>& undo) {
  std::vector<insert_result> out;
  out.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const envelope& e = *batch[i];
    if (auto it = inserted.find(e.id); it != inserted.end()) {
      out.push_back({e.id, insert_status::inserted, it->second.available_at, it->second.created_at});
      continue;
    }
    if (existing.count(e.id) != 0) {
      if (!inserted.empty()) undo();
      throw error(errc::already_exists, fmt::format("envelope {}: an envelope with this id is already stored", i),
                  "duplicate_id");
    }
    if (e.idempotency_key.empty()) {
      // Left out, yet no stored row holds its id and it has no idempotency
      // key: a conflict this writer cannot name. Saying duplicate_id here
      // would send a caller that drops stored ids round the same batch forever.
      if (!inserted.empty()) undo();
      throw error(errc::conflict,
                  fmt::format("envelope {}: the insert left it out, but no stored envelope holds its id", i),
                  "insert_left_out");
    }
    if (policy == idempotency_policy::error) {
      if (!inserted.empty()) undo();
      throw error(errc::duplicate, fmt::format("envelope {}: its idempotency key is held by a stored envelope", i),
                  "idempotency_conflict");
    }
    out.push_back({e.id, insert_status::skipped, std::nullopt, std::nullopt});
  }
  return out;
}

}  // namespace

std::vector<insert_result> postgres_insert(const exec_fn& exec, const names& n, const std::vector<const envelope*>& batch,
                                           idempotency_policy policy, bool notify, const std::string& channel) {
  std::vector<std::string> ids, topics, payloads, versions, metadata, keys, idem, avail, created;
  std::vector<bool> avail_set, created_set;
  for (const envelope* e : batch) {
    ids.push_back(e->id);
    topics.push_back(e->topic);
    payloads.push_back(hex_encode(e->payload));
    versions.push_back(std::to_string(e->payload_version));
    metadata.push_back(encode_metadata(e->metadata));
    keys.push_back(e->ordering_key);
    idem.push_back(e->idempotency_key);
    avail.push_back(e->available_at ? std::to_string(micros(*e->available_at)) : "");
    created.push_back(e->created_at ? std::to_string(micros(*e->created_at)) : "");
    avail_set.push_back(e->available_at.has_value());
    created_set.push_back(e->created_at.has_value());
  }
  auto array = [](const std::vector<std::string>& v, const std::vector<bool>* set = nullptr) {
    std::vector<const std::string*> p;
    for (std::size_t i = 0; i < v.size(); ++i) p.push_back(set && !(*set)[i] ? nullptr : &v[i]);
    return pg::detail::text_array(p);
  };
  std::vector<param> params{array(ids),  array(topics), array(payloads),           array(versions),
                            array(metadata), array(keys), array(idem), array(avail, &avail_set),
                            array(created, &created_set)};
  // With notify on, the insert calls pg_notify itself when it wrote a row:
  // one round trip, not two.
  if (notify) {
    params.emplace_back(channel);
    params.emplace_back(n.qualified);
  }
  const auto rows = exec(render(engine::postgres, notify ? "insert_notify" : "insert", n), params);
  std::unordered_map<std::string, returned> inserted;
  for (const auto& r : rows) {
    inserted[*r[0]] = {from_micros(std::stoll(*r[1])), from_micros(std::stoll(*r[2]))};
  }
  std::set<std::string> existing;
  if (inserted.size() < batch.size()) {
    std::vector<std::string> missing;
    for (const envelope* e : batch) {
      if (!inserted.count(e->id)) missing.push_back(e->id);
    }
    for (const auto& r : exec(render(engine::postgres, "insert_existing", n), {array(missing)})) existing.insert(*r[0]);
  }
  auto out = classify(batch, inserted, existing, policy, [&] {
    std::vector<std::string> mine;
    for (const auto& [id, _] : inserted) mine.push_back(id);
    exec(render(engine::postgres, "insert_undo", n), {array(mine)});
  });
  return out;
}

std::vector<insert_result> sqlite_insert(const exec_fn& exec, const names& n, const std::vector<const envelope*>& batch,
                                         idempotency_policy policy) {
  nlohmann::json rows_json = nlohmann::json::array();
  std::string payloads;
  for (const envelope* e : batch) {
    nlohmann::json j = {{"id", e->id},
                        {"topic", e->topic},
                        {"off", payloads.size() + 1},
                        {"len", e->payload.size()},
                        {"v", e->payload_version},
                        {"m", encode_metadata(e->metadata)},
                        {"k", e->ordering_key},
                        {"i", e->idempotency_key}};
    j["a"] = e->available_at ? nlohmann::json(micros(*e->available_at)) : nlohmann::json(nullptr);
    j["c"] = e->created_at ? nlohmann::json(micros(*e->created_at)) : nlohmann::json(nullptr);
    rows_json.push_back(std::move(j));
    payloads += e->payload;
  }
  const auto rows = exec(render(engine::sqlite, "insert", n), {rows_json.dump(), payloads, host_now_us()});
  std::unordered_map<std::string, returned> inserted;
  for (const auto& r : rows) inserted[*r[0]] = {from_micros(std::stoll(*r[1])), from_micros(std::stoll(*r[2]))};
  std::set<std::string> existing;
  auto id_array = [&](bool only_missing) {
    nlohmann::json a = nlohmann::json::array();
    for (const envelope* e : batch) {
      if (only_missing != (inserted.count(e->id) == 0)) continue;
      a.push_back(e->id);
    }
    return a.dump();
  };
  if (inserted.size() < batch.size()) {
    for (const auto& r : exec(render(engine::sqlite, "insert_existing", n), {id_array(true)})) existing.insert(*r[0]);
  }
  return classify(batch, inserted, existing, policy,
                  [&] { exec(render(engine::sqlite, "insert_undo", n), {id_array(false)}); });
}

// ---- the writer's engine choice: the one place it asks which engine it runs on ----

// transaction_required unless conn is idle inside a transaction block;
// transaction_aborted (invalid_state) inside a failed one.
void require_block(PGconn* conn) {
  if (conn == nullptr) throw error(errc::transaction_required, "the writer needs a transaction; got a null PGconn");
  if (PQpipelineStatus(conn) != PQ_PIPELINE_OFF) {
    throw error(errc::transaction_required, "the PGconn is in pipeline mode; the writer needs an idle transaction block");
  }
  const auto s = PQtransactionStatus(conn);
  if (s == PQTRANS_INERROR) {
    throw error(errc::invalid_state,
                "the caller's transaction is aborted (idle in a failed transaction block); roll it back first",
                "transaction_aborted");
  }
  if (s != PQTRANS_INTRANS) {
    throw error(errc::transaction_required,
                fmt::format("the writer needs a connection idle inside a transaction block; it is {}", status_name(s)));
  }
}

void require_open(spool::tx& tx) {
  if (tx.kind() == engine::postgres) {
    auto& state = static_cast<pg::detail::tx_impl&>(tx.state());
    if (state.done) throw error(errc::transaction_required, "the transaction has already ended");
    if (state.conn().opening_pending()) return;  // begun lazily: BEGIN goes out with the insert
    require_block(state.conn().native());
    return;
  }
  auto& state = static_cast<sqlite::detail::tx_impl&>(tx.state());
  if (state.done || !state.conn().in_transaction()) {
    throw error(errc::transaction_required, "the writer needs a SQLite handle inside an open transaction");
  }
}

std::vector<insert_result> insert_rows(engine kind, const exec_fn& exec, const names& n,
                                       const std::vector<const envelope*>& batch, const writer_options& o) {
  if (kind == engine::postgres) {
    return postgres_insert(exec, n, batch, o.on_idempotency_conflict, o.notify, o.config.notify_channel);
  }
  return sqlite_insert(exec, n, batch, o.on_idempotency_conflict);
}

}  // namespace spool::outbox::detail
