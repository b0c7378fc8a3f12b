// Follow-up jobs: the op queue's worker pool runs one confirmation per
// fulfilled order. Some fail their first attempt on purpose; the pool retries
// them with its backoff.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <stdexcept>

#include "shop.hpp"
#include "spool/ops/worker_pool.hpp"

namespace shop {

void send_confirmation(const spool::ops::op& o, spool::database& db, const settings& s, ledger& book) {
  const std::string order_id = o.payload.value("order_id", std::string{});
  const int n = number_of(order_id);
  if (n < 0 || n >= s.orders) throw spool::ops::permanent_error(fmt::format("not an order of this run: '{}'", order_id));
  if (order_at(n, s).followup_flaky && o.attempts <= 1) {
    ++book.followup_failures;
    throw std::runtime_error("mail server timed out");  // retried by the pool
  }
  db.exec(dialect(db.kind(), fmt::format("UPDATE {} SET status = 'confirmed' WHERE id = $1", orders_table)),
          {order_id});
  std::lock_guard lock(book.mu);
  ++book.confirmed[static_cast<std::size_t>(n)];
}

}  // namespace shop
