// What the catalog does to the messages of its queues (spool/mq/catalog.hpp):
// FIFO sequence numbers and deduplication, moves to and from dead-letter
// queues, and retention.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "mq/catalog_sql.hpp"
#include "spool/error.hpp"
#include "spool/mq/catalog.hpp"
#include "spool/mq/message.hpp"
#include "spool/tx.hpp"

namespace spool::mq {

namespace {

constexpr const char* source_member = "sqsSourceQueue";

std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// The payload with its record of the source queue set (dead_letter) or
// removed (redrive). A payload that does not decode moves unchanged.
std::string rewritten(const std::string& payload, std::string_view from, move_kind kind) {
  auto d = decode(payload);
  if (!d.ok()) return payload;
  auto& extra = d.value->extra;
  std::erase_if(extra, [](const extra_member& m) { return m.key == source_member; });
  if (kind == move_kind::dead_letter)
    extra.push_back({source_member, nlohmann::json(std::string(from)).dump()});
  return encode(*d.value);
}

}  // namespace

fifo_ticket catalog::record_fifo_send(spool::tx& t, std::string_view queue, std::string_view dedup_id,
                                      std::string_view message_id, std::chrono::milliseconds window) {
  const auto sql = [&](std::string_view file) { return detail::catalog_sql(t.kind(), schema_, file); };
  const std::string q(queue), dedup(dedup_id);
  // The lock first: a concurrent send of the same dedup id then sees this one's record.
  const auto next = t.exec(sql("fifo_next"), {q});
  if (next.empty() || !next.front().at(0))
    throw error(errc::not_found, fmt::format("no queue {} in the catalog", q), "queue_not_found");
  const auto now = epoch_ms(std::chrono::system_clock::now());
  t.exec(sql("fifo_expire"), {q, now - window.count()});
  const auto found = t.exec(sql("fifo_find"), {q, dedup});
  if (!found.empty()) {
    return {found.front().at(0).value_or(""), std::stoll(found.front().at(1).value_or("0")), true};
  }
  const auto seq = std::stoll(*next.front().at(0));
  t.exec(sql("fifo_record"), {q, dedup, std::string(message_id), seq, now});
  return {std::string(message_id), seq, false};
}

bool catalog::move(std::string_view from, std::string_view id, std::string_view receipt, std::string_view to,
                   move_kind kind) {
  spool::tx t(db_);
  const auto sql = [&](std::string_view file) { return detail::catalog_sql(t.kind(), schema_, file); };
  const auto taken = t.exec(sql("move_take"), {std::string(from), std::string(id), std::string(receipt)});
  if (taken.empty()) return false;
  const auto& r = taken.front();
  const param group = r.at(1) ? param(*r.at(1)) : param(nullptr);
  t.exec(sql("move_put"), {r.at(0).value_or(""), std::string(to), group,
                           rewritten(r.at(2).value_or(""), from, kind), std::stoll(r.at(3).value_or("0"))});
  t.commit();
  return true;
}

bool catalog::rewrite(std::string_view queue, std::string_view id, std::string_view receipt, const message& m) {
  spool::tx t(db_);
  const auto sql = detail::catalog_sql(t.kind(), schema_, "stamp") + " RETURNING id";
  const auto rows = t.exec(sql, {std::string(queue), std::string(id), std::string(receipt), encode(m)});
  t.commit();
  return !rows.empty();
}

void catalog::expire(std::string_view queue, std::chrono::system_clock::time_point cutoff) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(cutoff.time_since_epoch()).count();
  db_.exec(detail::catalog_sql(db_.kind(), schema_, "expire"), {std::string(queue), seconds});
}

}  // namespace spool::mq
