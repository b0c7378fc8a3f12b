// The writer on both engines (outbox.md §5; scenarios 3, 5, 6, 8, 22).
#include "outbox_fixture.hpp"

namespace spool::test {
namespace {

using namespace spool::outbox;

class outbox_writer : public outbox_conformance {
 protected:
  // Runs fn with an open transaction of the engine and a writer; commits when asked.
  template <class Fn>
  void in_tx(Fn fn, bool commit, writer_options o = {}) {
    writer w(*db_, o);
    if (is_pg()) {
      pg::tx tx(*db_);
      fn(w, tx);
      if (commit) tx.commit();
    } else {
      sqlite::tx tx(*db_);
      fn(w, tx);
      if (commit) tx.commit();
    }
  }
  std::string app_insert() {
    return is_pg() ? "INSERT INTO app_orders (id) VALUES ($1)" : "INSERT INTO app_orders (id) VALUES (?1)";
  }
  std::int64_t app_count() { return std::stoll(*db_->exec("SELECT count(*) FROM app_orders").at(0).at(0)); }
};

TEST_P(outbox_writer, the_application_row_and_the_envelope_commit_or_roll_back_together) {
  db_->exec("CREATE TABLE app_orders (id TEXT PRIMARY KEY)");
  in_tx([&](writer& w, auto& tx) {
    tx.exec(app_insert(), {std::string("o1")});
    (void)w.insert(tx, env("e1"));
  }, false);
  EXPECT_EQ(app_count(), 0);
  EXPECT_EQ(count(), 0);
  in_tx([&](writer& w, auto& tx) {
    tx.exec(app_insert(), {std::string("o2")});
    const auto r = w.insert(tx, env("e2"));
    EXPECT_EQ(r.status, insert_status::inserted);
    EXPECT_TRUE(r.created_at.has_value());
  }, true);
  EXPECT_EQ(app_count(), 1);
  EXPECT_EQ(count(), 1);
  // Two transactions are not atomic: the first commits, the second rolls back.
  in_tx([&](writer&, auto& tx) { tx.exec(app_insert(), {std::string("o3")}); }, true);
  in_tx([&](writer& w, auto&) { (void)w; }, false);
  EXPECT_EQ(app_count(), 2);
  EXPECT_EQ(count(), 1);
}

TEST_P(outbox_writer, an_empty_payload_inserts_claims_and_delivers_as_a_zero_length_value) {
  auto e = env("empty");
  e.payload.clear();
  write({e});
  EXPECT_EQ(count(is_pg() ? "payload IS NOT NULL AND octet_length(payload) = 0" : "payload IS NOT NULL AND length(payload) = 0"), 1);
  auto s = make_store();
  const auto got = s.claim("relay", 10, 30s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message.payload, "");
  s.mark_delivered(got[0].ref);
  EXPECT_EQ(state_of("empty"), "delivered");
}

TEST_P(outbox_writer, bad_batches_fail_without_any_statement_on_the_transaction) {
  writer_options o;
  o.max_batch_size = 2;
  in_tx([&](writer& w, auto& tx) {
    EXPECT_OUTBOX_ERROR((void)w.insert_batch(tx, {}), errc::invalid_argument, "empty_batch");
    EXPECT_OUTBOX_ERROR((void)w.insert_batch(tx, {env("a"), env("b"), env("c")}), errc::invalid_argument, "batch_too_large");
    auto big = env("big");
    big.topic = std::string(300, 't');
    EXPECT_OUTBOX_ERROR((void)w.insert_batch(tx, {env("a"), big}), errc::invalid_argument, "topic_too_large");
    EXPECT_OUTBOX_ERROR((void)w.insert_batch(tx, {env("a"), env("a")}), errc::already_exists, "duplicate_id");
    auto k1 = env("k1"), k2 = env("k2");
    k1.idempotency_key = k2.idempotency_key = "same";
    EXPECT_OUTBOX_ERROR((void)w.insert_batch(tx, {k1, k2}), errc::duplicate, "idempotency_conflict");
    // The transaction is untouched and usable.
    (void)w.insert(tx, env("ok"));
  }, true, o);
  EXPECT_EQ(count(), 1);
  EXPECT_OUTBOX_ERROR((void)writer(*db_, {.max_batch_size = 0}), errc::invalid_argument, "invalid_batch_limit");
  EXPECT_OUTBOX_ERROR((void)writer(*db_, {.max_batch_size = 5001}), errc::invalid_argument, "invalid_batch_limit");
}

TEST_P(outbox_writer, idempotency_conflicts_error_by_default_skip_on_request_and_leave_the_transaction_usable) {
  auto first = env("first");
  first.idempotency_key = "order-42";
  write({first});
  auto again = env("again");
  again.idempotency_key = "order-42";
  in_tx([&](writer& w, auto& tx) {
    EXPECT_OUTBOX_ERROR((void)w.insert_batch(tx, {env("fresh"), again}), errc::duplicate, "idempotency_conflict");
    EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("first")), errc::already_exists, "duplicate_id");
    (void)w.insert(tx, env("after"));  // still usable
  }, true);
  EXPECT_EQ(count(), 2);  // first, after: the failed batch left nothing
  EXPECT_EQ(state_of("fresh"), "missing");
  writer_options skip;
  skip.on_idempotency_conflict = idempotency_policy::skip;
  auto dup_in_batch = env("x2");
  dup_in_batch.idempotency_key = "k-new";
  auto x1 = env("x1");
  x1.idempotency_key = "k-new";
  in_tx([&](writer& w, auto& tx) {
    const auto r = w.insert_batch(tx, {env("y"), again, x1, dup_in_batch});
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0].status, insert_status::inserted);
    EXPECT_EQ(r[1].status, insert_status::skipped);
    EXPECT_EQ(r[2].status, insert_status::inserted);
    EXPECT_EQ(r[3].status, insert_status::skipped);
    EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("first")), errc::already_exists, "duplicate_id");
  }, true, skip);
  EXPECT_EQ(count(), 4);
}

TEST_P(outbox_writer, the_schema_accepts_the_extremes_and_rejects_shapes_spool_never_writes) {
  auto e = env("max");
  e.payload_version = 65535;
  write({e});
  EXPECT_EQ(count("metadata = '{}'"), 1);
  auto s = make_store();
  const auto c = s.claim("relay", 1, 30s);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].message.payload_version, 65535);
  auto rejects = [&](const std::string& sql) {
    try {
      db_->exec(sql);
      ADD_FAILURE() << "accepted: " << sql;
    } catch (const spool::error&) {
    }
  };
  const std::string cols = "INSERT INTO outbox_messages (id, topic, payload, payload_version, metadata, available_at, created_at, updated_at) VALUES ";
  if (is_pg()) {
    const std::string now = "now(), now(), now()";
    rejects(cols + "('a','t','',1,'[]'," + now + ")");
    rejects(cols + "('b','t','',1,'{\"k\":1}'," + now + ")");
    rejects(cols + "('c','t','',1,'{}','infinity', now(), now())");
    rejects(cols + "('d','t','',1,'{}','10000-01-01', now(), now())");
    rejects("UPDATE outbox_messages SET last_error_code = 'x', last_error = repeat('e', 4097)");
    rejects("UPDATE outbox_messages SET claim_count = 1000001");
    rejects("UPDATE outbox_messages SET failure_count = 10001");
    rejects("UPDATE outbox_messages SET payload_version = 0");
    rejects("UPDATE outbox_messages SET state = 'delivered'");  // leased fields still set
  } else {
    rejects(cols + "('a','t',x'',1,'[]',1,1,1)");
    rejects(cols + "('b','t',x'',1,'{\"k\":1}',1,1,1)");
    rejects(cols + "('c','t',x'',1,'{}',1e999,1,1)");
    rejects(cols + "('d','t',x'',1,'{}',253402300800000000,1,1)");
    rejects("UPDATE outbox_messages SET last_error_code = 'x', last_error = printf('%.4097c', 'e')");
    rejects("UPDATE outbox_messages SET claim_count = 1000001");
    rejects("UPDATE outbox_messages SET failure_count = 10001");
    rejects("UPDATE outbox_messages SET state = 'delivered'");
  }
}

TEST_P(outbox_writer, an_unmigrated_database_is_schema_version_mismatch_and_gets_no_ddl) {
  temp_dir other;
  std::optional<database> fresh;
  if (is_pg()) {
    fresh.emplace(database::open(make_pg_database("outbox_unmigrated")));
  } else {
    fresh.emplace(database::open(other.sqlite_uri()));
  }
  EXPECT_OUTBOX_ERROR((void)store(*fresh), errc::invalid_state, "schema_version_mismatch");
  writer w(*fresh);
  if (is_pg()) {
    pg::tx tx(*fresh);
    EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("x")), errc::invalid_state, "schema_version_mismatch");
  } else {
    sqlite::tx tx(*fresh);
    EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("x")), errc::invalid_state, "schema_version_mismatch");
  }
  const auto tables = fresh->exec(is_pg() ? "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'outbox%'"
                                          : "SELECT count(*) FROM sqlite_master WHERE name LIKE 'outbox%'");
  EXPECT_EQ(tables.at(0).at(0), "0");
}

TEST_P(outbox_writer, migrate_reruns_are_no_ops_and_reserved_word_tables_work) {
  EXPECT_TRUE(outbox::migrate(*db_).empty());
  outbox_config cfg{.table = "order"};
  const auto applied = outbox::migrate(*db_, cfg);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].component, "outbox");
  writer w(*db_, {.config = cfg});
  if (is_pg()) {
    pg::tx tx(*db_);
    (void)w.insert(tx, env("r1"));
    tx.commit();
  } else {
    sqlite::tx tx(*db_);
    (void)w.insert(tx, env("r1"));
    tx.commit();
  }
  store s(*db_, {.config = cfg});
  EXPECT_EQ(s.claim("relay", 5, 10s).size(), 1u);
  const auto ledger = db_->exec("SELECT target FROM spool_schema_migrations WHERE component = 'outbox' ORDER BY target");
  ASSERT_EQ(ledger.size(), 2u);
  EXPECT_EQ(*ledger[0][0], is_pg() ? "public.order" : "main.order");
  EXPECT_EQ(*ledger[1][0], is_pg() ? "public.outbox_messages" : "main.outbox_messages");
  EXPECT_OUTBOX_ERROR((void)outbox::migrate(*db_, {.table = "Bad"}), errc::invalid_argument, "invalid_identifier");
}

TEST_P(outbox_writer, concurrent_migrate_runs_apply_the_version_once) {
  outbox_config cfg{.table = "racing"};
  std::atomic<int> applied{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      auto db = database::open(uri_);
      try {
        applied += static_cast<int>(outbox::migrate(db, cfg).size());
      } catch (const spool::error& e) {
        if (e.code() != errc::unavailable) ADD_FAILURE() << e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(applied.load(), 1);
}

SPOOL_OUTBOX_BOTH_ENGINES(outbox_writer);

}  // namespace
}  // namespace spool::test
