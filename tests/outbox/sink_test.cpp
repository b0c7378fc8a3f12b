// The shipped sinks on both engines (outbox.md §8; scenario 30 without the
// webhook, which http_sink_test.cpp covers): real files, real commands
// (/bin/sh scripts in a temp dir) and a real queue table.
#include "spool/outbox/sink.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "outbox_fixture.hpp"
#include "spool/migrate.hpp"
#include "spool/mq/message.hpp"
#include "spool/outbox/relay.hpp"
#include "support/eventually.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

class outbox_sink : public outbox_conformance {
 protected:
  // Writes and claims rows, so the sinks get claimed messages as a relay does.
  std::vector<claimed_message> claimed(const std::vector<envelope>& rows, std::size_t limit = 100) {
    write(rows);
    return st_->claim("sink-test", limit, std::chrono::seconds(30));
  }
  claimed_message one(std::string id = "m1", std::string payload = "{\"n\":1}", std::string key = {}) {
    auto e = env(std::move(id), "orders", std::move(key));
    e.payload = std::move(payload);
    auto c = claimed({e});
    EXPECT_EQ(c.size(), 1u);
    return c.at(0);
  }
  // A /bin/sh script in the temp dir, executable.
  std::string script(const std::string& name, const std::string& body) {
    const auto path = tmp_.path() / name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path.string();
  }
  static std::vector<std::string> lines_of(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  void SetUp() override {
    outbox_conformance::SetUp();
    st_.emplace(*db_);
  }

  temp_dir tmp_;
  std::optional<store> st_;
  int counter_ = 0;
};

TEST_P(outbox_sink, the_delivery_document_carries_the_canonical_envelope_its_counters_and_available_at) {
  const auto m = one();
  const auto doc = nlohmann::json::parse(delivery_document(m));
  EXPECT_EQ(doc.at("envelope").dump(), nlohmann::json::parse(canonical_json(m.message)).dump());
  EXPECT_EQ(doc.at("claim_count"), 1);
  EXPECT_EQ(doc.at("failure_count"), 0);
  EXPECT_EQ(doc.at("available_at"), format_time(*m.message.available_at));
  EXPECT_EQ(parse_canonical_json(doc.at("envelope").dump()).id, "m1");
}

TEST_P(outbox_sink, the_callback_sink_passes_the_message_and_an_empty_callback_is_sink_required) {
  EXPECT_OUTBOX_ERROR((void)make_callback_sink({}), errc::invalid_argument, "sink_required");
  std::string seen;
  auto s = make_callback_sink([&](const claimed_message& m, std::stop_token) {
    seen = m.message.id;
    return sink_outcome::permanent("bad", "no");
  });
  const auto out = s->publish(one(), {});
  EXPECT_EQ(seen, "m1");
  EXPECT_EQ(out.kind, outcome_class::permanent);
}

TEST_P(outbox_sink, the_file_sink_appends_one_whole_document_per_line_from_many_threads) {
  std::vector<envelope> rows;
  for (int i = 0; i < 40; ++i) rows.push_back(env("f" + std::to_string(i), "t"));
  const auto msgs = claimed(rows);
  ASSERT_EQ(msgs.size(), 40u);
  const auto path = tmp_.path() / "out.jsonl";
  std::ofstream(path) << "{\"existing\":true}\n";  // appends, never truncates
  auto s = make_file_sink({path.string(), true});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < msgs.size(); i += 8) {
        EXPECT_EQ(s->publish(msgs[i], {}).kind, outcome_class::delivered);
      }
    });
  }
  for (auto& t : threads) t.join();
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 41u);
  std::set<std::string> ids;
  for (std::size_t i = 1; i < lines.size(); ++i)
    ids.insert(nlohmann::json::parse(lines[i]).at("envelope").at("id"));
  EXPECT_EQ(ids.size(), 40u);
}

TEST_P(outbox_sink, the_file_sink_reopens_its_path_after_a_rotation) {
  const auto msgs = claimed({env("r1"), env("r2")});
  const auto path = tmp_.path() / "out.jsonl";
  auto s = make_file_sink({path.string(), false});
  ASSERT_EQ(s->publish(msgs[0], {}).kind, outcome_class::delivered);
  std::filesystem::rename(path, tmp_.path() / "out.jsonl.1");
  s->reopen();
  ASSERT_EQ(s->publish(msgs[1], {}).kind, outcome_class::delivered);
  ASSERT_EQ(lines_of(tmp_.path() / "out.jsonl.1").size(), 1u);
  const auto now = lines_of(path);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(now[0]).at("envelope").at("id"), "r2");
}

TEST_P(outbox_sink, a_file_write_error_is_transient) {
  auto s = make_file_sink({"/dev/full", true});
  const auto out = s->publish(one(), {});
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "file_write_failed");
}

// fsync applies to regular files only: a device or a pipe has nothing to
// sync, and fsync fails there with EINVAL (every delivery was retried).
TEST_P(outbox_sink, the_file_sink_with_fsync_delivers_to_a_device_and_a_pipe) {
  auto null = make_file_sink({"/dev/null", true});
  EXPECT_EQ(null->publish(one("n1"), {}).kind, outcome_class::delivered);
  const auto fifo = tmp_.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // a reader, so the sink's open does not block
  ASSERT_GE(reader, 0);
  auto pipe = make_file_sink({fifo.string(), true});
  EXPECT_EQ(pipe->publish(one("n2"), {}).kind, outcome_class::delivered);
  char buf[4096];
  const auto got = ::read(reader, buf, sizeof buf);
  ::close(reader);
  ASSERT_GT(got, 0);
  EXPECT_EQ(nlohmann::json::parse(std::string(buf, static_cast<std::size_t>(got))).at("envelope").at("id"), "n2");
}

TEST_P(outbox_sink, the_command_sink_feeds_the_document_on_stdin_with_the_envelope_in_its_environment) {
  const auto dir = tmp_.path().string();
  command_sink_options o;
  o.argv = {script("ok.sh", "cat > " + dir +
                                "/stdin.json\n"
                                "echo \"$SPOOL_OUTBOX_ID $SPOOL_OUTBOX_TOPIC $SPOOL_OUTBOX_CLAIM_COUNT "
                                "$SPOOL_OUTBOX_FAILURE_COUNT\" > " +
                                dir + "/env.txt")};
  auto s = make_command_sink(o);
  const auto m = one();
  EXPECT_EQ(s->publish(m, {}).kind, outcome_class::delivered);
  EXPECT_EQ(lines_of(tmp_.path() / "env.txt"), std::vector<std::string>{"m1 orders 1 0"});
  EXPECT_EQ(lines_of(tmp_.path() / "stdin.json"), std::vector<std::string>{delivery_document(m)});
}

TEST_P(outbox_sink, command_exits_signals_and_timeouts_map_to_outcomes_with_the_head_of_stderr) {
  const auto m = one();
  auto run = [&](const std::string& body, command_sink_options o = {}) {
    o.argv = {script("s" + std::to_string(counter_++) + ".sh", body)};
    return make_command_sink(o)->publish(m, {});
  };
  EXPECT_EQ(run("exit 0").kind, outcome_class::delivered);
  auto out = run("echo 'bad input' >&2; exit 65");
  EXPECT_EQ(out.kind, outcome_class::permanent);
  EXPECT_EQ(out.code, "exit_65");
  EXPECT_EQ(out.message.substr(0, 9), "bad input");
  out = run("echo 'try later' >&2; exit 75");
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "exit_75");
  out = run("kill -9 $$");
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "signal_9");
  command_sink_options quick;
  quick.timeout = std::chrono::milliseconds(200);
  quick.kill_grace = std::chrono::milliseconds(100);
  out = run("trap '' TERM; sleep 30 & wait; sleep 30", quick);  // ignores SIGTERM: SIGKILL ends it
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "timeout");
  command_sink_options codes;
  codes.permanent_exit_codes = {3};
  EXPECT_EQ(run("exit 3", codes).kind, outcome_class::permanent);
  EXPECT_EQ(run("exit 65", codes).kind, outcome_class::transient);
  // Only the first KiB of stderr, sanitised.
  out = run("head -c 5000 /dev/zero | tr '\\0' 'x' >&2; exit 1");
  EXPECT_LE(out.message.size(), 1024u);
  EXPECT_EQ(out.message.substr(0, 10), "xxxxxxxxxx");
  out = run("exit 1");
  EXPECT_EQ(out.message, "exited with status 1");
  // A missing program is a transient failure, not an exception.
  command_sink_options missing;
  missing.argv = {"/nonexistent/spool-sink"};
  EXPECT_EQ(make_command_sink(missing)->publish(m, {}).kind, outcome_class::transient);
  EXPECT_OUTBOX_ERROR((void)make_command_sink({}), errc::invalid_argument, "invalid_config");
}

TEST_P(outbox_sink, a_stop_request_terminates_the_command_and_is_transient) {
  const auto m = one();
  command_sink_options o;
  o.argv = {script("slow.sh", "exec sleep 30")};
  auto s = make_command_sink(o);
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  const auto out = s->publish(m, stop.get_token());
  stopper.join();
  EXPECT_EQ(out.kind, outcome_class::transient);
  EXPECT_EQ(out.code, "stopped");
}

class outbox_mq_sink : public outbox_sink {
 protected:
  void SetUp() override {
    outbox_sink::SetUp();
    spool::migrate(*db_);  // the queue tables too
  }
  std::vector<std::vector<std::optional<std::string>>> queue_rows() {
    std::vector<std::vector<std::optional<std::string>>> out;
    for (const auto& r :
         db_->exec("SELECT id, queue_name, message_group_id, payload FROM queue_messages ORDER BY id")) {
      out.push_back({r[0], r[1], r[2], r[3]});
    }
    return out;
  }
  static mq_sink_options to_queue(std::string queue) {
    mq_sink_options o;
    o.queue = std::move(queue);
    return o;
  }
  static std::string queue_payload(const std::string& id, const std::optional<std::string>& group = {}) {
    mq::message m;
    m.id = id;
    m.pool_code = "pool";
    m.mediation_type = "HTTP";
    m.mediation_target = "http://example/x";
    m.message_group_id = group;
    m.dispatch_mode = "IMMEDIATE";
    return mq::encode(m);
  }
};

TEST_P(outbox_mq_sink, the_queue_sink_in_the_same_database_inserts_once_despite_redelivery) {
  auto s = make_mq_sink(*db_, to_queue("orders"));
  ASSERT_TRUE(s->records_delivery());
  auto m = one("e1", queue_payload(""), "customer-7");
  ASSERT_EQ(s->publish(m, {}).kind, outcome_class::delivered);
  s->record_delivered(*st_, m, {});
  EXPECT_EQ(state_of("e1"), "delivered");
  auto rows = queue_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(*rows[0][0], "e1");  // the empty message id became the envelope id
  EXPECT_EQ(*rows[0][1], "orders");
  EXPECT_EQ(*rows[0][2], "customer-7");  // the ordering key is the message group
  EXPECT_EQ(mq::decode(*rows[0][3]).value->message_group_id, "customer-7");

  // A redelivery (replayed, claimed again) meets the existing row: already_present counts as delivered.
  (void)st_->replay({{"e1"}, "test", "redeliver", std::nullopt});
  auto again = st_->claim("sink-test", 1, std::chrono::seconds(30));
  ASSERT_EQ(again.size(), 1u);
  s->record_delivered(*st_, again[0], {});
  EXPECT_EQ(state_of("e1"), "delivered");
  EXPECT_EQ(queue_rows().size(), 1u);
}

TEST_P(outbox_mq_sink, in_the_same_database_a_lost_lease_rolls_back_the_queue_insert) {
  auto s = make_mq_sink(*db_, to_queue("orders"));
  auto m = one("e2", queue_payload("q2"));
  expire_lease("e2");
  EXPECT_OUTBOX_ERROR(s->record_delivered(*st_, m, {}), errc::lease_lost, "lease_lost");
  EXPECT_TRUE(queue_rows().empty());
  EXPECT_EQ(state_of("e2"), "leased");
}

TEST_P(outbox_mq_sink, a_payload_that_is_not_a_queue_message_is_rejected_permanently) {
  auto s = make_mq_sink(*db_, to_queue("orders"));
  auto m = one("e3", "not json");
  const auto out = s->publish(m, {});
  EXPECT_EQ(out.kind, outcome_class::permanent);
  EXPECT_EQ(out.code, "sink_rejected");
  try {
    s->record_delivered(*st_, m, {});
    ADD_FAILURE() << "expected sink_failed";
  } catch (const sink_failed& e) {
    EXPECT_EQ(e.outcome().code, "sink_rejected");
  }
  EXPECT_EQ(state_of("e3"), "leased");
  EXPECT_TRUE(queue_rows().empty());
}

TEST_P(outbox_mq_sink, a_batch_record_commits_the_held_rows_with_their_queue_rows_and_fails_only_the_bad_ones) {
  auto s = make_mq_sink(*db_, to_queue("orders"));
  std::vector<envelope> rows;
  for (const char* id : {"b1", "b2", "b3", "b4"}) {
    auto e = env(id, "orders", std::string("k-") + id);
    e.payload = std::string(id) == "b3" ? "not json" : queue_payload("");
    rows.push_back(std::move(e));
  }
  auto got = claimed(rows);
  ASSERT_EQ(got.size(), 4u);
  std::sort(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.message.id < b.message.id; });
  expire_lease("b4");
  const auto out = s->record_delivered_batch(*st_, {&got[0], &got[1], &got[2], &got[3]}, {});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_TRUE(out[0].delivered);
  EXPECT_TRUE(out[1].delivered);
  EXPECT_FALSE(out[2].delivered);  // the sink cannot make it a message: its own failure
  ASSERT_TRUE(out[2].failure.has_value());
  EXPECT_EQ(out[2].failure->kind, outcome_class::permanent);
  EXPECT_EQ(out[2].failure->code, "sink_rejected");
  EXPECT_FALSE(out[3].delivered);  // lease lost: neither delivered nor failed
  EXPECT_FALSE(out[3].failure.has_value());
  EXPECT_EQ(state_of("b1"), "delivered");
  EXPECT_EQ(state_of("b2"), "delivered");
  EXPECT_EQ(state_of("b3"), "leased");
  EXPECT_EQ(state_of("b4"), "leased");
  const auto q = queue_rows();
  ASSERT_EQ(q.size(), 2u);  // exactly the delivered rows, nothing for the lost lease
  EXPECT_EQ(*q[0][0], "b1");
  EXPECT_EQ(*q[0][2], "k-b1");
  EXPECT_EQ(*q[1][0], "b2");
}

// The relay hands the queue sink whole batches: an ordered relay's rows of
// different keys commit together with their queue rows, and each key's next
// envelope is delivered only after its predecessor's record committed.
TEST_P(outbox_mq_sink, an_ordered_relay_into_the_queue_records_batches_and_keeps_each_keys_order) {
  std::vector<envelope> rows;
  for (int i = 0; i < 60; ++i) {
    auto e = env(fmt::format("o{:03}", i), "orders", fmt::format("key-{}", i % 6));
    e.payload = queue_payload("");
    rows.push_back(std::move(e));
  }
  write(rows);
  std::mutex mu;
  std::vector<std::size_t> batches;
  store_options so;
  so.observer = [&](const event& e) {
    if (!e.ok || e.op != operation::deliver) return;
    std::lock_guard lock(mu);
    batches.push_back(e.count);
  };
  store observed(*db_, so);
  relay_options ro;
  ro.owner = "ordered-batches";
  ro.mode = serialization::by_ordering_key;
  ro.max_in_flight = 8;
  ro.poll_interval = std::chrono::milliseconds(20);
  relay r(observed, make_mq_sink(*db_, to_queue("orders")), ro);
  r.start();
  ASSERT_TRUE(eventually([&] { return queue_rows().size() == 60; }));
  r.stop();
  const auto m = r.metrics();
  EXPECT_EQ(m.delivered, 60u);
  EXPECT_EQ(m.lease_lost, 0u);
  EXPECT_EQ(m.delivery_unrecorded, 0u);
  {
    std::lock_guard lock(mu);
    EXPECT_GT(*std::max_element(batches.begin(), batches.end()), 1u);  // several keys per transaction
  }
  std::map<std::string, std::vector<std::int64_t>> delivered_at;  // per key, in envelope order
  const std::string sql = is_pg() ? "SELECT ordering_key, (extract(epoch FROM delivered_at) * 1000000)::bigint "
                                    "FROM outbox_messages ORDER BY id"
                                  : "SELECT ordering_key, delivered_at FROM outbox_messages ORDER BY id";
  for (const auto& row : db_->exec(sql)) delivered_at[*row[0]].push_back(std::stoll(*row[1]));
  ASSERT_EQ(delivered_at.size(), 6u);
  for (const auto& [key, times] : delivered_at) {
    ASSERT_EQ(times.size(), 10u) << key;
    for (std::size_t i = 1; i < times.size(); ++i) EXPECT_LT(times[i - 1], times[i]) << key << " #" << i;
  }
}

TEST_P(outbox_mq_sink, a_failing_write_in_a_batch_records_transaction_rolls_back_every_row) {
  write({env("r1"), env("r2")});
  auto got = st_->claim("sink-test", 2, std::chrono::seconds(30));
  ASSERT_EQ(got.size(), 2u);
  std::vector<lease_ref> refs{got[0].ref, got[1].ref};
  std::vector<bool> told;
  auto fail = [&](const std::vector<bool>& held) {
    told = held;
    throw std::runtime_error("the caller's write failed");
  };
  EXPECT_THROW((void)st_->mark_delivered_batch(refs, std::function<void(spool::tx&, const std::vector<bool>&)>(
                                                         [&](spool::tx&, const std::vector<bool>& h) { fail(h); })),
               std::runtime_error);
  EXPECT_EQ(told, (std::vector<bool>{true, true}));
  EXPECT_EQ(state_of("r1"), "leased");  // nothing committed
  EXPECT_EQ(state_of("r2"), "leased");
}

TEST_P(outbox_mq_sink,
       the_queue_sink_for_another_database_inserts_in_its_own_transaction_and_keeps_the_payload_group) {
  auto s = make_mq_sink(*db_, [] {
    mq_sink_options o;
    o.topic_queues = {{"orders", "by-topic"}};
    o.same_database = false;
    return o;
  }());
  ASSERT_FALSE(s->records_delivery());
  auto m = one("e4", queue_payload("q4", "payload-group"));
  ASSERT_EQ(s->publish(m, {}).kind, outcome_class::delivered);
  ASSERT_EQ(s->publish(m, {}).kind, outcome_class::delivered);  // already_present
  const auto rows = queue_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(*rows[0][0], "q4");
  EXPECT_EQ(*rows[0][1], "by-topic");
  EXPECT_EQ(*rows[0][2], "payload-group");  // an empty ordering key keeps the payload's group
  s->record_delivered(*st_, m, {});
  EXPECT_EQ(state_of("e4"), "delivered");
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_sink);
SPOOL_OUTBOX_BOTH_ENGINES(outbox_mq_sink);

}  // namespace
}  // namespace spool::test
