// The example's shared vocabulary: which orders exist, which of them fail on
// purpose, and the database it owns.
#include "shop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "spool/migrate.hpp"
#include "spool/outbox/writer.hpp"

namespace shop {

int poison_number(const settings& s) { return s.orders / 2; }

order_ref order_at(int number, const settings& s) {
  order_ref o;
  o.number = number;
  o.id = fmt::format("order-{:06}", number);
  o.customer = fmt::format("customer-{:02}", number % s.customers);
  o.customer_seq = number / s.customers;
  o.poison = number == poison_number(s);
  // Deterministic, so a run is reproducible and the checks know what to
  // expect; hashed, so the failures spread over all customers instead of
  // lining up behind one (each failure holds its customer's queue for a backoff).
  const auto h = static_cast<std::uint32_t>(number) * 2654435761u;
  o.fails_once = !o.poison && (h >> 16) % 10 == 3;
  o.followup_flaky = !o.poison && (h >> 20) % 20 == 7;
  return o;
}

int number_of(const std::string& order_id) {
  constexpr std::string_view prefix = "order-";
  if (order_id.size() != prefix.size() + 6 || order_id.compare(0, prefix.size(), prefix) != 0) return -1;
  int n = 0;
  for (std::size_t i = prefix.size(); i < order_id.size(); ++i) {
    if (order_id[i] < '0' || order_id[i] > '9') return -1;
    n = n * 10 + (order_id[i] - '0');
  }
  return n;
}

std::string dialect(spool::engine e, std::string sql) {
  if (e == spool::engine::sqlite) std::replace(sql.begin(), sql.end(), '$', '?');
  return sql;
}

long ledger::fulfilled_total() {
  std::lock_guard lock(mu);
  return std::accumulate(fulfilled.begin(), fulfilled.end(), 0L);
}

long ledger::confirmed_total() {
  std::lock_guard lock(mu);
  return std::accumulate(confirmed.begin(), confirmed.end(), 0L);
}

void prepare_database(spool::database& db) {
  // The application owns this database, so it runs the DDL itself (Spool's
  // runtimes never do). Idempotent: an up-to-date schema applies nothing.
  spool::migrate_options mo;
  mo.components = {"mq", "ops"};
  spool::migrate(db, mo);
  spool::outbox::outbox_config oc;
  oc.table = outbox_table;
  spool::outbox::migrate(db, oc);
  db.exec(fmt::format("CREATE TABLE IF NOT EXISTS {} (id TEXT PRIMARY KEY, customer TEXT NOT NULL, "
                      "customer_seq INTEGER NOT NULL, amount_cents BIGINT NOT NULL, status TEXT NOT NULL)",
                      orders_table));

  // A clean slate for the example's own rows only.
  const auto e = db.kind();
  db.exec(fmt::format("DELETE FROM {}", orders_table));
  db.exec(fmt::format("DELETE FROM {}", outbox_table));
  db.exec(dialect(e, "DELETE FROM queue_messages WHERE queue_name = $1"), {queue_name});
  db.exec(dialect(e, "DELETE FROM queue_messages_failed WHERE queue_name = $1"), {queue_name});
  db.exec(dialect(e, "DELETE FROM ops_queue WHERE type = $1"), {confirm_op});
}

}  // namespace shop
