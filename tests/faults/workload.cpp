// The fault workload (faults_support.hpp): its objects, its threads' start and
// stop, the recovery of the same objects after a fault, and the drain that
// reads back everything the faults left.
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

workload::workload(database db, std::string label)
    : db_(std::move(db)), label_(std::move(label)), s_(std::make_unique<state>()) {
  mq::queue_options mo;
  mo.name = "faults";
  mo.visibility_timeout = visibility;
  mq_ = std::make_unique<mq::queue>(db_, mo);
  ops::queue_options oo;
  oo.call_timeout = call_budget;
  ops_ = std::make_unique<ops::queue>(db_, oo);
  writer_ = std::make_unique<outbox::writer>(db_);
  store_ = std::make_unique<outbox::store>(db_);
}

workload::~workload() { stop(); }

void workload::start() {
  threads_.emplace_back([this](std::stop_token st) { mq_producer(st); });
  threads_.emplace_back([this](std::stop_token st) { ops_producer(st); });
  threads_.emplace_back([this](std::stop_token st) { outbox_producer(st); });
  threads_.emplace_back([this](std::stop_token st) { mq_consumer(st); });
  threads_.emplace_back([this](std::stop_token st) { ops_consumer(st); });
  threads_.emplace_back([this](std::stop_token st) { outbox_consumer(st); });
}

void workload::stop() {
  for (auto& t : threads_) t.request_stop();
  threads_.clear();  // joins
}

bool workload::wait_for_progress(std::uint64_t n, std::chrono::seconds deadline) {
  std::array<std::uint64_t, 6> base{};
  for (std::size_t i = 0; i < base.size(); ++i) base[i] = s_->progress[i].load();
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < base.size(); ++i) all = all && s_->progress[i].load() >= base[i] + n;
    if (all) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
}

void workload::expect_same_objects_recover() {
  constexpr int attempts = 100;
  // A probe's call, given a fresh id per attempt (slug names its kind), and
  // the producer sets its outcome belongs to (none for reads).
  struct probe {
    std::string name;
    std::string slug;
    std::function<void(const std::string& id)> call;
    std::set<std::string>* ok = nullptr;
    std::set<std::string>* doubt = nullptr;
    std::set<std::string>* absent = nullptr;
  };
  const std::vector<probe> probes = {
      {"mq publish", "mq",
       [&](const std::string& id) {
         (void)mq_->publish(mq_message(id), 0s, call_options::within(call_budget));
       },
       &s_->mq_ok, &s_->mq_doubt, &s_->mq_absent},
      {"mq metrics", "", [&](const std::string&) { (void)mq_->metrics(call_options::within(call_budget)); }},
      {"ops enqueue", "ops",
       [&](const std::string& id) {
         ops::new_op op;
         op.id = id;
         op.type = op_type;
         op.max_attempts = 1000;
         (void)ops_->enqueue(op, {}, call_options::within(call_budget));
       },
       &s_->ops_ok, &s_->ops_doubt, &s_->ops_absent},
      {"ops stats", "", [&](const std::string&) { (void)ops_->stats(call_options::within(call_budget)); }},
      {"outbox backlog", "",
       [&](const std::string&) { (void)store_->backlog(call_options::within(call_budget)); }},
      {"outbox insert+commit", "outbox",
       [&](const std::string& id) {
         pg::tx tx(db_);
         (void)writer_->insert(tx, envelope_for(id));
         tx.commit();
       },
       // An outbox probe's failure counts as in doubt (the phase is not tracked here).
       &s_->outbox_ok, &s_->outbox_doubt, &s_->outbox_doubt},
  };
  for (const auto& p : probes) {
    bool failed = false, done = false;
    for (int i = 0; i < attempts && !done; ++i) {
      // Idle pooled connections whose backend died fail once each, so the
      // first attempts may fail; a probe's id is never reused.
      const std::string id = fmt::format("{}-after-{}-{}", label_, p.slug, i);
      const auto o = s_->attempt(s_->recover, failed, [&] { p.call(id); });
      done = o == outcome::ok;
      if (p.ok != nullptr) {
        std::lock_guard lock(s_->m);
        (o == outcome::ok ? *p.ok : o == outcome::unavailable ? *p.absent : *p.doubt).insert(id);
      }
      if (!done) std::this_thread::sleep_for(100ms);
    }
    EXPECT_TRUE(done) << p.name << " did not succeed within " << attempts << " attempts on the same objects";
  }
}

void workload::drain() {
  const auto until = std::chrono::steady_clock::now() + 75s;
  bool failed = false;
  bool mq_done = false, ops_done = false, outbox_done = false;
  while (!(mq_done && ops_done && outbox_done)) {
    if (std::chrono::steady_clock::now() > until) {
      ADD_FAILURE() << "the drain did not empty the queues within 75 s (mq done: " << mq_done
                    << ", ops done: " << ops_done << ", outbox done: " << outbox_done << ")";
      return;
    }
    if (!outbox_done) {
      // Leases of in-doubt claims lapse after outbox_lease; claim takes them again.
      std::vector<outbox::claimed_message> got;
      if (s_->attempt(s_->recover, failed, [&] {
            got = store_->claim("faults-drain", 100, outbox_lease, outbox::serialization::none,
                                call_options::within(call_budget));
          }) == outcome::ok) {
        for (const auto& c : got) {
          const auto o = s_->attempt(
              s_->recover, failed, [&] { store_->mark_delivered(c.ref, call_options::within(call_budget)); },
              true);
          std::lock_guard lock(s_->m);
          if (s_->outbox_delivered.count(c.ref.id) || s_->outbox_drained.count(c.ref.id)) {
            s_->outbox_redelivered.push_back(c.ref.id);
          }
          s_->outbox_claimed.insert(c.ref.id);
          if (o == outcome::ok) s_->outbox_drained.insert(c.ref.id);
        }
        if (got.empty()) {
          outbox::backlog_info b;
          if (s_->attempt(s_->recover, failed,
                          [&] { b = store_->backlog(call_options::within(call_budget)); }) == outcome::ok) {
            outbox_done = b.pending == 0 && b.leased == 0;
          }
        }
      }
    }
    if (!mq_done) {
      std::vector<mq::delivered_message> got;
      if (s_->attempt(s_->recover, failed,
                      [&] { got = mq_->poll(100, call_options::within(call_budget)); }) == outcome::ok) {
        for (const auto& d : got) {
          const auto o = s_->attempt(s_->recover, failed, [&] {
            mq_->ack(d.receipt, d.broker_message_id, call_options::within(call_budget));
          });
          std::lock_guard lock(s_->m);
          if (s_->mq_acked.count(d.body.id) || s_->mq_drained.count(d.body.id)) {
            s_->mq_redelivered.push_back(d.body.id);
          }
          s_->mq_delivered.insert(d.body.id);
          if (o == outcome::ok) s_->mq_drained.insert(d.body.id);
        }
        if (got.empty()) {
          mq::queue_metrics m;
          if (s_->attempt(s_->recover, failed,
                          [&] { m = mq_->metrics(call_options::within(call_budget)); }) == outcome::ok) {
            mq_done = m.pending == 0 && m.in_flight == 0 && m.delayed == 0;
          }
        }
      }
    }
    if (!ops_done) {
      std::optional<ops::op> got;
      (void)s_->attempt(s_->recover, failed, [&] {
        // Claims of in-doubt dequeues (and acks) hold their op until the
        // lease lapses; the rescuer returns them.
        (void)ops_->rescue_expired(1s, call_options::within(call_budget));
        got = ops_->dequeue({op_type}, {}, call_options::within(call_budget));
      });
      if (got) {
        const auto o = s_->attempt(s_->recover, failed, [&] {
          ops_->ack(got->id, got->lease_token.value_or(""), call_options::within(call_budget));
        });
        std::lock_guard lock(s_->m);
        if (s_->ops_acked.count(got->id) || s_->ops_drained.count(got->id))
          s_->ops_redelivered.push_back(got->id);
        s_->ops_delivered.insert(got->id);
        if (o == outcome::ok) s_->ops_drained.insert(got->id);
      } else {
        ops::queue_stats st;
        if (s_->attempt(s_->recover, failed, [&] { st = ops_->stats(call_options::within(call_budget)); }) ==
            outcome::ok) {
          ops_done = st.pending == 0 && st.running == 0;
        }
      }
    }
    if (!(mq_done && ops_done && outbox_done)) std::this_thread::sleep_for(50ms);
  }
}

workload::acknowledged_ids workload::snapshot() {
  std::lock_guard lock(s_->m);
  acknowledged_ids a;
  a.mq = s_->mq_ok;
  a.ops = s_->ops_ok;
  a.outbox = s_->outbox_ok;
  a.mq_consumed = either(s_->mq_acked, s_->mq_ack_doubt);
  return a;
}

}  // namespace spool::test::faults
