#include "faults/faults_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>

#include "spool/pg.hpp"

namespace spool::test::faults {

using namespace std::chrono_literals;

// ---- processes ----

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (const char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string run(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  std::string out;
  std::array<char, 4096> buf{};
  while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    throw std::runtime_error(fmt::format("{} failed (status {}):\n{}", command, WEXITSTATUS(status), out));
  }
  return out;
}

std::string required_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(
        fmt::format("${} is not set: run this test through ctest (tests/CMakeLists.txt sets it)", name));
  }
  return v;
}

std::string read_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error("cannot read " + file.string());
  return line;
}

std::uint64_t fault_seed() {
  if (const char* s = std::getenv("SPOOL_TEST_FAULTS_SEED"); s != nullptr && *s != '\0') {
    return std::stoull(s);
  }
  return std::random_device{}();
}

namespace {

// stop deletes a cluster's data in the background, so removing the temp dir
// at once can race it and leave the directory behind: retry a while.
void remove_eventually(const std::filesystem::path& dir) {
  std::error_code ec;
  for (int attempt = 0; attempt < 100 && std::filesystem::exists(dir, ec); ++attempt) {
    std::filesystem::remove_all(dir, ec);
    if (std::filesystem::exists(dir, ec)) std::this_thread::sleep_for(100ms);
  }
}

}  // namespace

private_pg_server::private_pg_server(bool durable) : script_(required_env("SPOOL_TEST_PG_SCRIPT")) {
  script("start", {}, durable);  // pg_server.sh tears down what it started when start fails
  uri_ = read_line(dir_.path() / "uri");
}

private_pg_server::~private_pg_server() {
  try {
    script("stop");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "could not stop the private PostgreSQL server: " << e.what();
  }
  remove_eventually(dir_.path());
}

void private_pg_server::restart(const std::string& mode) { script("restart", mode); }

void private_pg_server::script(const std::string& command, const std::string& mode, bool durable) {
  (void)run(fmt::format("{}{} {} {}{}", durable ? "SPOOL_PG_DURABLE=1 " : "", sh_quote(script_), command,
                        sh_quote(dir_.path().string()), mode.empty() ? "" : " " + mode));
}

replica_pair::replica_pair() : script_(required_env("SPOOL_TEST_PG_REPLICA_SCRIPT")) {
  try {
    script("start-primary");
    script("start-standby");
    multi_uri_ = read_line(dir_.path() / "multi_uri");
    primary_uri_ = read_line(dir_.path() / "primary" / "uri");
    standby_uri_ = read_line(dir_.path() / "standby" / "uri");
    standby_port_ = read_line(dir_.path() / "standby" / "port");
  } catch (...) {
    // The destructor does not run for a constructor that throws.
    try {
      script("stop");
    } catch (const std::exception&) {
    }
    remove_eventually(dir_.path());
    throw;
  }
}

replica_pair::~replica_pair() {
  try {
    script("stop");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "could not stop the primary and the standby: " << e.what();
  }
  remove_eventually(dir_.path());
}

void replica_pair::stop_primary(const std::string& mode) { script("stop-primary", mode); }
void replica_pair::promote() { script("promote"); }

void replica_pair::script(const std::string& command, const std::string& mode) {
  (void)run(fmt::format("{} {} {}{}", sh_quote(script_), command, sh_quote(dir_.path().string()),
                        mode.empty() ? "" : " " + mode));
}

// ---- the workload ----

namespace {

enum class outcome { ok, unavailable, in_doubt, unexpected };

constexpr auto call_budget = 10s;  // every queue call's deadline: a call never hangs
constexpr auto visibility = std::chrono::seconds(3);
constexpr auto outbox_lease = std::chrono::seconds(3);
const std::string op_type = "fault";

mq::message mq_message(const std::string& id) {
  mq::message m;
  m.id = id;
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.test/faults";
  return m;
}

outbox::envelope envelope_for(const std::string& id) {
  outbox::envelope e;
  e.id = id;
  e.topic = "faults";
  e.payload = "p";
  return e;
}

std::string join_some(const std::set<std::string>& ids, std::size_t n = 5) {
  std::string out;
  for (const auto& id : ids) {
    if (n-- == 0) break;
    out += (out.empty() ? "" : ", ") + id;
  }
  return out;
}

std::set<std::string> minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const auto& x : a)
    if (!b.count(x)) out.insert(x);
  return out;
}

std::set<std::string> both(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const auto& x : a)
    if (b.count(x)) out.insert(x);
  return out;
}

std::set<std::string> either(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

}  // namespace

// Everything the threads record, under one mutex.
struct workload::state {
  std::mutex m;
  call_tally mq_publish, ops_enqueue, outbox_insert, mq_poll, mq_ack, ops_dequeue, ops_ack, outbox_claim,
      outbox_deliver, recover;
  // Producers: acknowledged, in doubt, and definitely not committed
  // (unavailable, or an outbox transaction that failed before COMMIT).
  std::set<std::string> mq_ok, mq_doubt, mq_absent;
  std::set<std::string> ops_ok, ops_doubt, ops_absent;
  std::set<std::string> outbox_ok, outbox_doubt, outbox_absent;
  // Consumers.
  std::set<std::string> mq_delivered, mq_acked, mq_ack_doubt, mq_drained;
  std::set<std::string> ops_delivered, ops_acked, ops_ack_doubt, ops_drained;
  std::set<std::string> outbox_claimed, outbox_delivered, outbox_deliver_doubt, outbox_drained;
  std::vector<std::string> mq_redelivered, ops_redelivered, outbox_redelivered;
  // Successes per worker: mq/ops/outbox producers, mq/ops/outbox consumers.
  std::array<std::atomic<std::uint64_t>, 6> progress{};

  // Runs f and records its outcome in t. failed_before is the worker's
  // previous outcome, for counting recoveries.
  // lease_lost_allowed: a lease that lapsed before its outcome was recorded
  // (nothing changed; the row is claimed again) counts as unavailable.
  outcome attempt(call_tally& t, bool& failed_before, const std::function<void()>& f,
                  bool lease_lost_allowed = false) {
    outcome o = outcome::ok;
    std::string reason, what;
    try {
      f();
    } catch (const spool::error& e) {
      o = e.code() == errc::unavailable                        ? outcome::unavailable
          : e.code() == errc::in_doubt                         ? outcome::in_doubt
          : e.code() == errc::lease_lost && lease_lost_allowed ? outcome::unavailable
                                                               : outcome::unexpected;
      reason = fmt::format("{}/{}", to_string(e.code()), e.reason());
      what = e.what();
      if (o == outcome::unavailable && !e.retryable() && e.code() != errc::lease_lost)
        o = outcome::unexpected;
    } catch (const std::exception& e) {
      o = outcome::unexpected;
      reason = "std::exception";
      what = e.what();
    }
    std::lock_guard lock(m);
    switch (o) {
      case outcome::ok:
        ++t.ok;
        if (failed_before) ++t.recoveries;
        break;
      case outcome::unavailable:
        ++t.unavailable;
        break;
      case outcome::in_doubt:
        ++t.in_doubt;
        break;
      case outcome::unexpected:
        if (t.unexpected.size() < 20) t.unexpected.push_back(fmt::format("{}: {}", reason, what));
        break;
    }
    if (!reason.empty()) ++t.reasons[reason];
    failed_before = o != outcome::ok;
    return o;
  }
};

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

fault_report workload::verify(const std::string& fault) {
  std::lock_guard lock(s_->m);
  auto& s = *s_;
  fault_report r;

  // Every call failed only as unavailable or in_doubt.
  const std::vector<std::pair<std::string, const call_tally*>> tallies = {
      {"mq publish", &s.mq_publish},
      {"ops enqueue", &s.ops_enqueue},
      {"outbox insert+commit", &s.outbox_insert},
      {"mq poll", &s.mq_poll},
      {"mq ack", &s.mq_ack},
      {"ops dequeue", &s.ops_dequeue},
      {"ops ack", &s.ops_ack},
      {"outbox claim", &s.outbox_claim},
      {"outbox mark_delivered", &s.outbox_deliver},
      {"after the fault", &s.recover}};
  for (const auto& [name, t] : tallies) {
    EXPECT_TRUE(t->unexpected.empty())
        << name << " failed with something other than unavailable or in_doubt: " << t->unexpected.front();
    r.recoveries += t->recoveries;
    for (const auto& [reason, n] : t->reasons) r.reasons[reason] += n;
  }

  // mq: every acknowledged publish was consumed (ack returned success or
  // in_doubt during the run, or the drain acked it); an unavailable publish
  // was never delivered; nothing came back after its ack returned success.
  const auto mq_accounted = either(either(s.mq_acked, s.mq_ack_doubt), s.mq_drained);
  const auto mq_lost = minus(s.mq_ok, mq_accounted);
  EXPECT_TRUE(mq_lost.empty()) << mq_lost.size() << " acknowledged mq publishes lost: " << join_some(mq_lost);
  const auto mq_phantom = both(s.mq_absent, s.mq_delivered);
  EXPECT_TRUE(mq_phantom.empty()) << "publishes reported unavailable were delivered: "
                                  << join_some(mq_phantom);
  const auto mq_unknown = minus(s.mq_delivered, either(s.mq_ok, s.mq_doubt));
  EXPECT_TRUE(mq_unknown.empty()) << "delivered ids nobody published: " << join_some(mq_unknown);
  EXPECT_TRUE(s.mq_redelivered.empty())
      << s.mq_redelivered.size() << " mq messages delivered again after their ack returned success, e.g. "
      << s.mq_redelivered.front();
  const auto mq_left = db_.exec("SELECT count(*) FROM queue_messages WHERE queue_name = 'faults'");
  EXPECT_EQ(mq_left.at(0).at(0).value_or("?"), "0") << "rows left in queue_messages after the drain";
  const auto mq_doubt_present = both(s.mq_doubt, s.mq_delivered).size();

  // ops: every acknowledged enqueue is stored and done; an unavailable
  // enqueue is not stored; nothing was claimed again after its ack.
  std::map<std::string, std::string> ops_rows;
  for (const auto& row : db_.exec("SELECT id, status FROM ops_queue WHERE type = $1", {op_type})) {
    ops_rows.emplace(row.at(0).value_or(""), row.at(1).value_or(""));
  }
  std::set<std::string> ops_lost, ops_not_done, ops_phantom;
  std::size_t ops_doubt_present = 0;
  for (const auto& id : s.ops_ok) {
    const auto it = ops_rows.find(id);
    if (it == ops_rows.end()) {
      ops_lost.insert(id);
    } else if (it->second != "done") {
      ops_not_done.insert(id + " (" + it->second + ")");
    }
  }
  for (const auto& id : s.ops_absent)
    if (ops_rows.count(id)) ops_phantom.insert(id);
  for (const auto& id : s.ops_doubt) ops_doubt_present += ops_rows.count(id);
  EXPECT_TRUE(ops_lost.empty()) << ops_lost.size() << " acknowledged enqueues lost: " << join_some(ops_lost);
  EXPECT_TRUE(ops_not_done.empty()) << "acknowledged ops not done after the drain: "
                                    << join_some(ops_not_done);
  EXPECT_TRUE(ops_phantom.empty()) << "enqueues reported unavailable were stored: " << join_some(ops_phantom);
  EXPECT_TRUE(s.ops_redelivered.empty())
      << s.ops_redelivered.size() << " ops claimed again after their ack returned success, e.g. "
      << s.ops_redelivered.front();

  // outbox: every committed envelope is stored; one whose transaction failed
  // before COMMIT (or whose COMMIT was unavailable) is not.
  std::set<std::string> outbox_rows;
  for (const auto& row : db_.exec("SELECT id FROM " + outbox_table_))
    outbox_rows.insert(row.at(0).value_or(""));
  const auto outbox_lost = minus(s.outbox_ok, outbox_rows);
  const auto outbox_phantom = both(s.outbox_absent, outbox_rows);
  EXPECT_TRUE(outbox_lost.empty()) << outbox_lost.size()
                                   << " committed outbox envelopes lost: " << join_some(outbox_lost);
  EXPECT_TRUE(outbox_phantom.empty())
      << "envelopes of transactions that never committed are stored: " << join_some(outbox_phantom);
  const auto outbox_doubt_present = both(s.outbox_doubt, outbox_rows).size();
  // Every stored envelope was delivered (during the run or by the drain),
  // none was claimed again after mark_delivered returned success, and only
  // written envelopes were claimed.
  const auto outbox_undelivered =
      db_.exec("SELECT count(*) FROM " + outbox_table_ + " WHERE state <> 'delivered'");
  EXPECT_EQ(outbox_undelivered.at(0).at(0).value_or("?"), "0")
      << "envelopes left undelivered after the drain";
  EXPECT_TRUE(s.outbox_redelivered.empty())
      << s.outbox_redelivered.size()
      << " envelopes claimed again after mark_delivered returned success, e.g. "
      << s.outbox_redelivered.front();
  const auto outbox_unknown = minus(s.outbox_claimed, either(s.outbox_ok, s.outbox_doubt));
  EXPECT_TRUE(outbox_unknown.empty()) << "claimed envelopes nobody committed: " << join_some(outbox_unknown);

  r.acknowledged = s.mq_ok.size() + s.ops_ok.size() + s.outbox_ok.size();
  r.in_doubt = s.mq_doubt.size() + s.ops_doubt.size() + s.outbox_doubt.size();
  r.in_doubt_present = mq_doubt_present + ops_doubt_present + outbox_doubt_present;
  r.unavailable = s.mq_absent.size() + s.ops_absent.size() + s.outbox_absent.size();
  r.lost = mq_lost.size() + ops_lost.size() + outbox_lost.size();
  r.redelivered_after_ack = s.mq_redelivered.size() + s.ops_redelivered.size() + s.outbox_redelivered.size();

  auto reasons = [](const call_tally& t) {
    std::string out;
    for (const auto& [k, v] : t.reasons) out += fmt::format("{}{}×{}", out.empty() ? "" : ", ", v, k);
    return out.empty() ? std::string("none") : out;
  };
  fmt::print("[faults] {}\n", fault);
  fmt::print(
      "[faults]   mq publish: {} acknowledged, {} in_doubt ({} present), {} unavailable; {} lost [{}]\n",
      s.mq_ok.size(), s.mq_doubt.size(), mq_doubt_present, s.mq_absent.size(), mq_lost.size(),
      reasons(s.mq_publish));
  fmt::print(
      "[faults]   mq consume: {} acked, {} ack in_doubt, {} drained after; {} delivered again after an ack "
      "[poll: {}; ack: {}]\n",
      s.mq_acked.size(), s.mq_ack_doubt.size(), s.mq_drained.size(), s.mq_redelivered.size(),
      reasons(s.mq_poll), reasons(s.mq_ack));
  fmt::print(
      "[faults]   ops enqueue: {} acknowledged, {} in_doubt ({} present), {} unavailable; {} lost [{}]\n",
      s.ops_ok.size(), s.ops_doubt.size(), ops_doubt_present, s.ops_absent.size(), ops_lost.size(),
      reasons(s.ops_enqueue));
  fmt::print(
      "[faults]   ops consume: {} acked, {} ack in_doubt, {} drained after; {} claimed again after an ack "
      "[dequeue: {}; ack: {}]\n",
      s.ops_acked.size(), s.ops_ack_doubt.size(), s.ops_drained.size(), s.ops_redelivered.size(),
      reasons(s.ops_dequeue), reasons(s.ops_ack));
  fmt::print(
      "[faults]   outbox insert+commit: {} acknowledged, {} in_doubt ({} present), {} not committed; {} lost "
      "[{}]\n",
      s.outbox_ok.size(), s.outbox_doubt.size(), outbox_doubt_present, s.outbox_absent.size(),
      outbox_lost.size(), reasons(s.outbox_insert));
  fmt::print(
      "[faults]   outbox consume: {} delivered, {} in_doubt, {} drained after; {} claimed again after "
      "delivery "
      "[claim: {}; mark_delivered: {}]\n",
      s.outbox_delivered.size(), s.outbox_deliver_doubt.size(), s.outbox_drained.size(),
      s.outbox_redelivered.size(), reasons(s.outbox_claim), reasons(s.outbox_deliver));
  fmt::print(
      "[faults]   total: {} lost of {} acknowledged; {} in_doubt ({} present, {} absent); {} unavailable; "
      "{} recoveries on the same objects; {} delivered again after an ack\n",
      r.lost, r.acknowledged, r.in_doubt, r.in_doubt_present, r.in_doubt - r.in_doubt_present, r.unavailable,
      r.recoveries, r.redelivered_after_ack);
  std::fflush(stdout);
  ::testing::Test::RecordProperty("acknowledged", static_cast<int>(r.acknowledged));
  ::testing::Test::RecordProperty("lost", static_cast<int>(r.lost));
  ::testing::Test::RecordProperty("in_doubt", static_cast<int>(r.in_doubt));
  ::testing::Test::RecordProperty("recoveries", static_cast<int>(r.recoveries));
  return r;
}

}  // namespace spool::test::faults
