// Fulfilment: the queue consumer's handler. It sees each customer's orders in
// the order they were placed (the queue runs with strict group order), fails
// some first attempts on purpose (the consumer nacks them with a backoff and
// they come back), and can never handle the poison order (after
// max_receive_count deliveries the queue moves it to queue_messages_failed).
#include <nlohmann/json.hpp>

#include <stdexcept>

#include "shop.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"

namespace shop {

void fulfil(const spool::mq::delivered_message& d, spool::ops::queue& jobs, const settings& s, ledger& book) {
  const int n = number_of(d.body.id);
  if (n < 0 || n >= s.orders) {  // someone else's message on our queue name: count it, let it go
    ++book.foreign_messages;
    return;
  }
  const order_ref o = order_at(n, s);
  if (o.poison) {
    ++book.poison_attempts;
    throw std::runtime_error("order has no shipping address");
  }
  if (o.fails_once && d.receive_count.value_or(1) == 1) {
    ++book.transient_failures;
    throw std::runtime_error("warehouse API busy, try again");
  }

  // The follow-up job. Enqueued before the ack, so a crash in between
  // redelivers the message rather than losing the job; the dedup key folds a
  // redelivery's second enqueue into the pending one.
  spool::ops::new_op job;
  job.type = confirm_op;
  job.payload = {{"order_id", o.id}, {"customer", o.customer}};
  job.dedup_key = o.id;
  job.max_attempts = 5;
  spool::ops::enqueue_options eo;
  eo.duplicates = spool::ops::on_duplicate::return_existing;
  (void)jobs.enqueue(job, eo);

  std::lock_guard lock(book.mu);
  ++book.fulfilled[static_cast<std::size_t>(n)];
  book.per_customer[static_cast<std::size_t>(n % s.customers)].push_back(o.customer_seq);
}

}  // namespace shop
