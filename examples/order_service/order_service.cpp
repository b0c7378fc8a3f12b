// The order service: the application transaction that writes an order and its
// "order.placed" event together, through the outbox writer. Either both commit
// or neither does — the event cannot be lost or sent for an order that rolled back.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <thread>
#include <vector>

#include "shop.hpp"
#include "spool/error.hpp"
#include "spool/mq/message.hpp"
#include "spool/outbox/envelope.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/tx.hpp"

namespace shop {
namespace {

// The envelope's payload is a queue message in the wire format (the relay's
// queue sink publishes it as is; the group comes from the ordering key).
std::string order_message(const order_ref& o, std::int64_t amount_cents) {
  spool::mq::message m;
  m.id = o.id;
  m.pool_code = "shop";
  m.mediation_type = "HTTP";
  m.mediation_target = "https://fulfilment.example.com/orders";
  m.dispatch_mode = "BLOCK_ON_ERROR";
  m.extra.push_back({"customerSeq", std::to_string(o.customer_seq)});
  m.extra.push_back({"amountCents", std::to_string(amount_cents)});
  if (o.poison) m.extra.push_back({"shippingAddress", "null"});  // what fulfilment cannot handle
  return spool::mq::encode(m);
}

void write_order(spool::database& db, spool::outbox::writer& w, const spool::outbox::envelope& env,
                 const order_ref& o, std::int64_t amount_cents) {
  spool::tx tx(db);  // either engine; rolls back in its destructor unless committed
  tx.exec(dialect(db.kind(), fmt::format("INSERT INTO {} (id, customer, customer_seq, amount_cents, status) "
                                         "VALUES ($1, $2, $3, $4, 'placed')",
                                         orders_table)),
          {o.id, o.customer, std::int64_t{o.customer_seq}, amount_cents});
  w.insert(tx, env);
  tx.commit();
}

void place_one(spool::database& db, spool::outbox::writer& w, const spool::outbox::envelope_builder& builder,
               const order_ref& o, ledger& book) {
  const std::int64_t amount_cents = 1000 + (o.number * 37) % 9000;
  spool::outbox::envelope_params p;
  p.topic = "order.placed";
  p.payload = order_message(o, amount_cents);
  p.ordering_key = o.customer;  // the relay keeps each customer's events in commit order
  p.idempotency_key = o.id;
  const auto env = builder.build(std::move(p));
  for (int attempt = 1;; ++attempt) {
    try {
      write_order(db, w, env, o, amount_cents);
      ++book.written;
      return;
    } catch (const spool::error& e) {
      // Busy or briefly unreachable: the transaction rolled back, so writing it
      // again cannot duplicate anything. Anything else is the caller's to see.
      if (!e.retryable() || attempt >= 50) throw;
      ++book.write_retries;
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    }
  }
}

}  // namespace

void place_orders(spool::database& db, spool::outbox::writer& w, const settings& s, ledger& book) {
  const spool::outbox::envelope_builder builder;  // UUIDv7 ids
  std::vector<std::exception_ptr> failures(static_cast<std::size_t>(s.producers));
  {
    std::vector<std::jthread> producers;
    for (int p = 0; p < s.producers; ++p) {
      producers.emplace_back([&, p] {
        try {
          for (int n = 0; n < s.orders; ++n) {
            if ((n % s.customers) % s.producers == p) place_one(db, w, builder, order_at(n, s), book);
          }
        } catch (...) {
          failures[static_cast<std::size_t>(p)] = std::current_exception();
        }
      });
    }
  }
  for (const auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }
}

}  // namespace shop
