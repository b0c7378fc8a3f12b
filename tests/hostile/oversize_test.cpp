// Oversized payloads and batches (issue 7): each limit refuses with a typed
// error naming it, at exactly one byte over, and a batch whose last item is
// over a limit inserts nothing at all; exactly at the limit is accepted.
#include <nlohmann/json.hpp>

#include "hostile/hostile_fixture.hpp"
#include "spool/mq/queue.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::test {
namespace {

using oversize = hostile;

// A message whose wire JSON is exactly `bytes` long (poolCode padded).
mq::message mq_sized(const std::string& id, std::size_t bytes) {
  mq::message m;
  m.id = id;
  m.mediation_type = "HTTP";
  m.mediation_target = "https://example.test/hook";
  m.pool_code = "p";
  const std::size_t base = mq::encode(m).size();
  m.pool_code = std::string(1 + bytes - base, 'p');
  return m;
}

TEST_P(oversize, an_mq_message_one_byte_over_1_mib_is_payload_too_large_and_inserts_nothing) {
  mq::queue_options o;
  o.name = "q";
  mq::queue q(*db_, o);
  const std::size_t limit = 1u << 20;
  const auto before = take_fingerprint();
  ASSERT_EQ(mq::encode(mq_sized("big", limit + 1)).size(), limit + 1);
  try {
    q.publish(mq_sized("big", limit + 1));
    ADD_FAILURE() << "an oversized message was published";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_EQ(e.reason(), "payload_too_large") << e.what();
    EXPECT_NE(std::string(e.what()).find("max_payload_bytes"), std::string::npos) << e.what();
  }
  expect_only(before, take_fingerprint(), {}, "nothing inserted");

  // Only the last of three is over: the whole batch is refused, in every form.
  const std::vector<mq::message> batch = {mq_sized("a", 100), mq_sized("b", limit), mq_sized("c", limit + 1)};
  EXPECT_SPOOL_ERROR(q.publish_batch(batch), errc::invalid_argument);
  in_tx(*db_, [&](auto& tx) { EXPECT_SPOOL_ERROR(q.publish_batch(tx, batch), errc::invalid_argument); });
  std::vector<mq::batch_row> rows;
  for (const auto& m : batch) rows.push_back({"q", m});
  in_tx(*db_, [&](auto& tx) { EXPECT_SPOOL_ERROR(mq::insert_batch(tx, rows), errc::invalid_argument); });
  expect_only(before, take_fingerprint(), {}, "no item of a refused batch was inserted");

  // Exactly at the limit is accepted and round-trips.
  q.publish(mq_sized("edge", limit));
  const auto got = q.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, mq_sized("edge", limit));
}

TEST_P(oversize, a_configured_mq_max_payload_bytes_is_honoured_by_publish_and_insert_batch) {
  mq::queue_options o;
  o.name = "q";
  o.max_payload_bytes = 200;
  mq::queue q(*db_, o);
  const auto before = take_fingerprint();
  EXPECT_SPOOL_ERROR(q.publish(mq_sized("x", 201)), errc::invalid_argument);
  mq::insert_options io;
  io.max_payload_bytes = 200;
  in_tx(*db_, [&](auto& tx) {
    EXPECT_SPOOL_ERROR(mq::insert_batch(tx, {{"q", mq_sized("y", 150)}, {"q", mq_sized("x", 201)}}, io),
                       errc::invalid_argument);
  });
  expect_only(before, take_fingerprint(), {}, "nothing inserted");
  q.publish(mq_sized("x", 200));
  expect_only(before, take_fingerprint(), {{"queue_messages", 1}}, "exactly the limit is accepted");
}

// An op payload whose serialised JSON is exactly `bytes` long.
nlohmann::json ops_sized(std::size_t bytes) {
  nlohmann::json j = {{"s", ""}};
  const std::size_t base = j.dump().size();
  j["s"] = std::string(bytes - base, 'x');
  return j;
}

TEST_P(oversize, an_op_payload_over_max_payload_bytes_is_refused_and_a_batch_with_one_inserts_nothing) {
  ops::queue q(*db_);
  const std::size_t limit = 1u << 20;
  const auto before = take_fingerprint();
  ops::new_op big;
  big.type = "t";
  big.payload = ops_sized(limit + 1);
  try {
    q.enqueue(big);
    ADD_FAILURE() << "an oversized op was enqueued";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_EQ(e.reason(), "payload_too_large") << e.what();
  }
  ops::new_op small;
  small.type = "t";
  std::vector<ops::new_op> batch = {small, small, big};
  try {
    (void)q.enqueue_batch(batch);
    ADD_FAILURE() << "a batch with an oversized op was enqueued";
  } catch (const spool::error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("op 2 of the batch"), std::string::npos) << e.what();
  }
  in_tx(*db_,
        [&](auto& tx) { EXPECT_SPOOL_ERROR((void)q.enqueue_batch(tx, batch), errc::invalid_argument); });
  expect_only(before, take_fingerprint(), {}, "nothing inserted");

  ops::queue_options o;
  o.max_payload_bytes = 100;
  ops::queue tight(*db_, o);
  ops::new_op edge;
  edge.type = "t";
  edge.payload = ops_sized(101);
  EXPECT_SPOOL_ERROR(tight.enqueue(edge), errc::invalid_argument);
  edge.payload = ops_sized(100);
  tight.enqueue(edge);
  big.payload = ops_sized(limit);
  q.enqueue(big);
  expect_only(before, take_fingerprint(), {{"ops_queue", 2}}, "exactly the limits are accepted");
}

outbox::envelope env(std::string id) {
  outbox::envelope e;
  e.id = std::move(id);
  e.topic = "t";
  e.payload = "{}";
  return e;
}

TEST_P(oversize, every_outbox_envelope_limit_refuses_one_byte_over_with_its_reason) {
  outbox::writer w(*db_);
  const outbox::limits l;
  struct over_case {
    std::string reason;
    outbox::envelope e;
  };
  std::vector<over_case> cases;
  auto add = [&](std::string reason, auto&& mutate) {
    auto e = env("e");
    mutate(e);
    cases.push_back({std::move(reason), std::move(e)});
  };
  add("id_too_large", [&](auto& e) { e.id = std::string(l.max_id_bytes + 1, 'i'); });
  add("topic_too_large", [&](auto& e) { e.topic = std::string(l.max_topic_bytes + 1, 't'); });
  add("payload_too_large", [&](auto& e) { e.payload = std::string(l.max_payload_bytes + 1, '\0'); });
  add("ordering_key_too_large",
      [&](auto& e) { e.ordering_key = std::string(l.max_ordering_key_bytes + 1, 'k'); });
  add("idempotency_key_too_large",
      [&](auto& e) { e.idempotency_key = std::string(l.max_idempotency_key_bytes + 1, 'k'); });
  add("metadata_entries_too_large", [&](auto& e) {
    for (std::size_t i = 0; i <= l.max_metadata_entries; ++i) e.metadata["k" + std::to_string(i)] = "v";
  });
  add("metadata_too_large", [&](auto& e) { e.metadata["k"] = std::string(l.max_metadata_bytes, 'v'); });
  const auto before = take_fingerprint();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.reason);
    auto expect_reason = [&](auto&& fn) {
      try {
        fn();
        ADD_FAILURE() << "accepted";
      } catch (const spool::error& e) {
        EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
        EXPECT_EQ(e.reason(), c.reason) << e.what();
      }
    };
    expect_reason([&] { outbox::validate_for_insert(c.e); });
    // Last of a batch: nothing of the batch is written, and the caller's
    // transaction is untouched (a valid write in it still commits).
    in_tx(*db_, [&](auto& tx) {
      expect_reason([&] { (void)w.insert_batch(tx, {env("ok1"), env("ok2"), c.e}); });
      (void)w.insert(tx, env("after"));
    });
    db_->exec("DELETE FROM outbox_messages WHERE id = 'after'");
  }
  expect_only(before, take_fingerprint(), {}, "nothing of a refused batch was written");

  // At the limits: accepted byte for byte.
  auto edge = env(std::string(l.max_id_bytes, 'i'));
  edge.topic = std::string(l.max_topic_bytes, 't');
  edge.payload = std::string(l.max_payload_bytes, '\0');
  edge.ordering_key = std::string(l.max_ordering_key_bytes, 'k');
  edge.idempotency_key = std::string(l.max_idempotency_key_bytes, 'k');
  in_tx(*db_, [&](auto& tx) { (void)w.insert(tx, edge); });
  expect_only(before, take_fingerprint(), {{"outbox_messages", 1}}, "the envelope at every limit is written");
}

TEST_P(oversize, an_outbox_batch_over_max_batch_size_is_batch_too_large_and_writes_nothing) {
  outbox::writer_options wo;
  wo.max_batch_size = 5;
  outbox::writer w(*db_, wo);
  std::vector<outbox::envelope> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(env("b" + std::to_string(i)));
  const auto before = take_fingerprint();
  in_tx(*db_, [&](auto& tx) {
    try {
      (void)w.insert_batch(tx, batch);
      ADD_FAILURE() << "an oversized batch was written";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_EQ(e.reason(), "batch_too_large") << e.what();
    }
  });
  expect_only(before, take_fingerprint(), {}, "nothing written");
  // The default maximum (100) and the ceiling of the setting (5,000).
  outbox::writer dflt(*db_);
  std::vector<outbox::envelope> hundred_one;
  for (int i = 0; i < 101; ++i) hundred_one.push_back(env("d" + std::to_string(i)));
  in_tx(*db_, [&](auto& tx) {
    EXPECT_SPOOL_ERROR((void)dflt.insert_batch(tx, hundred_one), errc::invalid_argument);
  });
  wo.max_batch_size = 5001;
  EXPECT_SPOOL_ERROR(outbox::writer(*db_, wo), errc::invalid_argument);
  wo.max_batch_size = 0;
  EXPECT_SPOOL_ERROR(outbox::writer(*db_, wo), errc::invalid_argument);
  expect_only(before, take_fingerprint(), {}, "nothing written");
  batch.pop_back();
  in_tx(*db_, [&](auto& tx) { EXPECT_EQ(w.insert_batch(tx, batch).size(), 5u); });
  expect_only(before, take_fingerprint(), {{"outbox_messages", 5}}, "exactly max_batch_size is written");
}

TEST_P(oversize, outbox_claims_and_replays_over_their_batch_limits_are_refused_and_change_nothing) {
  outbox::writer w(*db_);
  in_tx(*db_, [&](auto& tx) { (void)w.insert(tx, env("r")); });
  outbox::store st(*db_);
  const auto before = take_fingerprint();
  const auto rows_before = db_->exec("SELECT * FROM outbox_messages");
  auto expect_reason = [](auto&& fn, const std::string& reason) {
    try {
      fn();
      ADD_FAILURE() << "accepted";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_EQ(e.reason(), reason) << e.what();
    }
  };
  // max_claim_batch (default 100, at most 1,000) and max_admin_batch (100).
  expect_reason([&] { (void)st.claim("relay", 101, std::chrono::seconds(60)); }, "invalid_claim_limit");
  outbox::replay_request r;
  for (int i = 0; i < 101; ++i) r.ids.push_back("r" + std::to_string(i));
  r.requested_by = "ops";
  r.reason = "too many";
  expect_reason([&] { (void)st.replay(r); }, "invalid_admin_limit");
  r.ids = {"r"};
  r.reason = std::string(4097, 'x');
  expect_reason([&] { (void)st.replay(r); }, "value_outside_bounds");
  outbox::inspect_query q;
  q.limit = 101;
  expect_reason([&] { (void)st.inspect(q); }, "invalid_admin_limit");
  EXPECT_EQ(db_->exec("SELECT * FROM outbox_messages"), rows_before);
  expect_only(before, take_fingerprint(), {}, "nothing changed");
}

SPOOL_HOSTILE_BOTH_ENGINES(oversize);

}  // namespace
}  // namespace spool::test
