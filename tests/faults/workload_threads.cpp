// The fault workload's six threads: a producer and a consumer for each of the
// message queue, the op queue and the outbox, each recording every call's
// outcome.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>

#include "faults/workload_state.hpp"
#include "spool/pg.hpp"

namespace spool::test::faults {

namespace {

// A pause after a failed call, so a worker does not spin on a server that is down.
void back_off(const std::stop_token& st) {
  for (int i = 0; i < 4 && !st.stop_requested(); ++i) std::this_thread::sleep_for(5ms);
}

}  // namespace

void workload::mq_producer(std::stop_token st) {
  bool failed = false;
  for (std::uint64_t n = 0; !st.stop_requested(); ++n) {
    const std::string id = fmt::format("{}-mq-{}", label_, n);
    const auto o = s_->attempt(s_->mq_publish, failed, [&] {
      (void)mq_->publish(mq_message(id), 0s, call_options::within(call_budget));
    });
    {
      std::lock_guard lock(s_->m);
      (o == outcome::ok ? s_->mq_ok : o == outcome::unavailable ? s_->mq_absent : s_->mq_doubt).insert(id);
    }
    if (o == outcome::ok) {
      ++s_->progress[0];
      std::this_thread::sleep_for(2ms);  // bounds the volume the drain has to consume
    } else {
      back_off(st);
    }
  }
}

void workload::ops_producer(std::stop_token st) {
  bool failed = false;
  for (std::uint64_t n = 0; !st.stop_requested(); ++n) {
    const std::string id = fmt::format("{}-ops-{}", label_, n);
    const auto o = s_->attempt(s_->ops_enqueue, failed, [&] {
      ops::new_op op;
      op.id = id;
      op.type = op_type;
      op.payload = {{"n", n}};
      op.max_attempts = 1000;  // rescues of in-doubt claims must not spend the budget
      (void)ops_->enqueue(op, {}, call_options::within(call_budget));
    });
    {
      std::lock_guard lock(s_->m);
      (o == outcome::ok ? s_->ops_ok : o == outcome::unavailable ? s_->ops_absent : s_->ops_doubt).insert(id);
    }
    if (o == outcome::ok) {
      ++s_->progress[1];
      std::this_thread::sleep_for(2ms);
    } else {
      back_off(st);
    }
  }
}

void workload::outbox_producer(std::stop_token st) {
  bool failed = false;
  for (std::uint64_t n = 0; !st.stop_requested(); ++n) {
    const std::string id = fmt::format("{}-outbox-{}", label_, n);
    bool committing = false;
    const auto o = s_->attempt(s_->outbox_insert, failed, [&] {
      pg::tx tx(db_);
      tx.exec("SELECT 1");  // the caller's own work in the same transaction
      (void)writer_->insert(tx, envelope_for(id));
      committing = true;
      tx.commit();
    });
    {
      std::lock_guard lock(s_->m);
      // Before COMMIT was sent nothing can have committed, whatever the error.
      if (o == outcome::ok) {
        s_->outbox_ok.insert(id);
      } else if (o == outcome::unavailable || !committing) {
        s_->outbox_absent.insert(id);
      } else {
        s_->outbox_doubt.insert(id);
      }
    }
    if (o == outcome::ok) {
      ++s_->progress[2];
      std::this_thread::sleep_for(2ms);
    } else {
      back_off(st);
    }
  }
}

void workload::mq_consumer(std::stop_token st) {
  bool poll_failed = false, ack_failed = false;
  while (!st.stop_requested()) {
    std::vector<mq::delivered_message> got;
    if (s_->attempt(s_->mq_poll, poll_failed,
                    [&] { got = mq_->poll(10, call_options::within(call_budget)); }) != outcome::ok) {
      back_off(st);
      continue;
    }
    if (got.empty()) {
      std::this_thread::sleep_for(10ms);
      continue;
    }
    for (const auto& d : got) {
      {
        std::lock_guard lock(s_->m);
        if (s_->mq_acked.count(d.body.id)) s_->mq_redelivered.push_back(d.body.id);
        s_->mq_delivered.insert(d.body.id);
      }
      const auto o = s_->attempt(s_->mq_ack, ack_failed, [&] {
        mq_->ack(d.receipt, d.broker_message_id, call_options::within(call_budget));
      });
      std::lock_guard lock(s_->m);
      if (o == outcome::ok) {
        s_->mq_acked.insert(d.body.id);
        ++s_->progress[3];
      } else if (o != outcome::unavailable) {
        s_->mq_ack_doubt.insert(d.body.id);
      }
    }
  }
}

void workload::ops_consumer(std::stop_token st) {
  bool dequeue_failed = false, ack_failed = false;
  while (!st.stop_requested()) {
    std::optional<ops::op> got;
    if (s_->attempt(s_->ops_dequeue, dequeue_failed, [&] {
          got = ops_->dequeue({op_type}, {}, call_options::within(call_budget));
        }) != outcome::ok) {
      back_off(st);
      continue;
    }
    if (!got) {
      std::this_thread::sleep_for(10ms);
      continue;
    }
    {
      std::lock_guard lock(s_->m);
      if (s_->ops_acked.count(got->id)) s_->ops_redelivered.push_back(got->id);
      s_->ops_delivered.insert(got->id);
    }
    const auto o = s_->attempt(s_->ops_ack, ack_failed, [&] {
      ops_->ack(got->id, got->lease_token.value_or(""), call_options::within(call_budget));
    });
    std::lock_guard lock(s_->m);
    if (o == outcome::ok) {
      s_->ops_acked.insert(got->id);
      ++s_->progress[4];
    } else if (o != outcome::unavailable) {
      s_->ops_ack_doubt.insert(got->id);
    }
  }
}

void workload::outbox_consumer(std::stop_token st) {
  bool claim_failed = false, deliver_failed = false;
  while (!st.stop_requested()) {
    std::vector<outbox::claimed_message> got;
    if (s_->attempt(s_->outbox_claim, claim_failed, [&] {
          got = store_->claim("faults", 10, outbox_lease, outbox::serialization::none,
                              call_options::within(call_budget));
        }) != outcome::ok) {
      back_off(st);
      continue;
    }
    if (got.empty()) {
      std::this_thread::sleep_for(10ms);
      continue;
    }
    for (const auto& c : got) {
      {
        std::lock_guard lock(s_->m);
        if (s_->outbox_delivered.count(c.ref.id)) s_->outbox_redelivered.push_back(c.ref.id);
        s_->outbox_claimed.insert(c.ref.id);
      }
      const auto o = s_->attempt(
          s_->outbox_deliver, deliver_failed,
          [&] { store_->mark_delivered(c.ref, call_options::within(call_budget)); }, true);
      std::lock_guard lock(s_->m);
      if (o == outcome::ok) {
        s_->outbox_delivered.insert(c.ref.id);
        ++s_->progress[5];
      } else if (o != outcome::unavailable) {
        s_->outbox_deliver_doubt.insert(c.ref.id);
      }
    }
  }
}

}  // namespace spool::test::faults
