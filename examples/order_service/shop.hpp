// The order-service example: what its parts share.
//
// The pipeline (README, "the main job"):
//   order service ──(one transaction: order row + outbox envelope)──▶ shop_outbox
//   relay ──(ordered by customer)──▶ queue "shop-orders" (group = customer)
//   fulfilment consumers ──(per-customer order, transient failures, a poison order)──▶ op queue
//   follow-up worker pool ──▶ orders confirmed
// Every stage is a Spool runtime on the same database; the ledger records what the
// application's handlers saw so the run can check itself at the end.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "spool/database.hpp"

namespace spool::mq {
class queue;
struct delivered_message;
}  // namespace spool::mq
namespace spool::ops {
class queue;
struct op;
class handler_context;
}  // namespace spool::ops
namespace spool::outbox {
class writer;
}

namespace shop {

struct settings {
  std::string db = "sqlite:spool.db";
  int orders = 1000;
  int customers = 20;
  int producers = 2;   // order-service threads; each owns a fixed set of customers
  int consumers = 4;   // fulfilment threads (mq consumer concurrency)
  int followup_workers = 2;
  std::chrono::seconds time_limit{180};
  bool json = false;
  bool progress = true;  // live line on stderr (only when stderr is a terminal)
};

// Names the example owns in a shared database, so it never touches other rows.
inline const std::string queue_name = "shop-orders";
inline const std::string outbox_table = "shop_outbox";
inline const std::string orders_table = "shop_orders";
inline const std::string confirm_op = "shop.send_confirmation";
inline const std::string legacy_poison_id = "shop-legacy-garbled-1";

// Orders are numbered 0..orders-1; order n belongs to customer n % customers and
// is that customer's (n / customers)-th order.
struct order_ref {
  int number = 0;
  std::string id;        // "order-000042"
  std::string customer;  // "customer-07"
  int customer_seq = 0;
  bool poison = false;         // the fulfilment handler can never process it
  bool fails_once = false;     // the fulfilment handler fails its first attempt
  bool followup_flaky = false; // the confirmation job fails its first attempt
};
[[nodiscard]] order_ref order_at(int number, const settings& s);
[[nodiscard]] int poison_number(const settings& s);
[[nodiscard]] int number_of(const std::string& order_id);  // -1 when not an order id

// What the application's handlers observed. Thread safety: every member is
// atomic or guarded by mu.
struct ledger {
  explicit ledger(const settings& s)
      : fulfilled(static_cast<std::size_t>(s.orders)), confirmed(static_cast<std::size_t>(s.orders)),
        per_customer(static_cast<std::size_t>(s.customers)) {}
  std::atomic<long> written{0};             // orders committed with their envelope
  std::atomic<long> write_retries{0};       // retryable errors while writing (SQLite busy, …)
  std::atomic<long> transient_failures{0};  // fulfilment attempts that failed on purpose
  std::atomic<long> poison_attempts{0};
  std::atomic<long> followup_failures{0};
  std::atomic<long> foreign_messages{0};    // messages on our queue that are not our orders
  std::mutex mu;
  std::vector<int> fulfilled;                  // successful fulfilment handlings per order
  std::vector<int> confirmed;                  // successful confirmation jobs per order
  std::vector<std::vector<int>> per_customer;  // customer_seq in the order fulfilment handled them
  [[nodiscard]] long fulfilled_total();
  [[nodiscard]] long confirmed_total();
};

// ---- shop.cpp ----
// Migrates what the example uses (mq, ops, its own outbox table) and clears
// the example's own rows from an earlier run; nothing else is touched.
void prepare_database(spool::database& db);

// ---- order_service.cpp ----
// Places every order: one transaction each, the order row and its outbox
// envelope together (the outbox writer never commits; we do). Producer p
// writes the customers c with c % producers == p, in order, so each
// customer's orders commit in customer_seq order. Retries retryable errors.
void place_orders(spool::database& db, spool::outbox::writer& w, const settings& s, ledger& book);

// ---- fulfilment.cpp ----
// The queue consumer's handler: fulfils one order message, then enqueues its
// confirmation job (deduplicated by order id) before the consumer acks.
// Throws to make the consumer nack (transient failures, the poison order).
void fulfil(const spool::mq::delivered_message& d, spool::ops::queue& jobs, const settings& s, ledger& book);

// ---- followups.cpp ----
// The worker pool's handler for confirm_op: marks the order confirmed.
void send_confirmation(const spool::ops::op& o, spool::database& db, const settings& s, ledger& book);

// SQL written once with $n placeholders; SQLite spells them ?n.
[[nodiscard]] std::string dialect(spool::engine e, std::string sql);

}  // namespace shop
