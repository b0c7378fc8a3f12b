// The store on both engines, continued from store_test.cpp: cancelled
// calls that change nothing, read-only connections, a claim over a large
// backlog, delivery callbacks, counts, inspection, replay, pruning and the
// event observer. The suite is instantiated in store_test.cpp.
#include <sqlite3.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "store_fixture.hpp"

namespace spool::test {
namespace {

// Scenario 16. A call whose stop was requested, or whose deadline passed,
// before it started is refused before any statement is sent. For every store
// operation that takes call_options (the writer's insert and insert_batch take
// none: they run in the caller's transaction), both refusals are unavailable
// with their reason and leave the outbox and its audit byte-identical, with no
// callback or archiver run; the same call without them then succeeds.
TEST_P(outbox_store, a_pre_cancelled_call_of_each_store_operation_changes_nothing_and_then_succeeds) {
  write({env("k1", "t", "k"), env("k2", "t", "k"), env("extend"), env("extend_many"), env("deliver"),
         env("deliver_fn"), env("retry"), env("dead"), env("dead_too"), env("dead_three"), env("release")});
  auto s = make_store();
  std::stop_source stopped;
  stopped.request_stop();
  const std::vector<std::pair<call_options, std::string>> refusals{
      {{std::nullopt, stopped.get_token()}, "cancelled"},
      {{std::chrono::steady_clock::now() - 1s, {}}, "deadline_exceeded"}};
  auto refused = [&](const std::function<void(const call_options&)>& call) {
    for (const auto& [options, reason] : refusals) {
      const std::string before = table_image();
      EXPECT_OUTBOX_ERROR(call(options), errc::unavailable, reason);
      EXPECT_EQ(table_image(), before) << "a refused call (" << reason << ") changed the outbox";
    }
  };

  refused(
      [&](const call_options& o) { (void)s.claim("relay", 100, 30s, serialization::by_ordering_key, o); });
  const auto got = s.claim("relay", 100, 30s, serialization::by_ordering_key);
  ASSERT_EQ(got.size(), 10u);  // all but k2, held back by its head k1
  std::map<std::string, claimed_message> claimed;
  for (const auto& c : got) claimed[c.message.id] = c;
  auto ref = [&](const std::string& id) { return claimed.at(id).ref; };

  refused([&](const call_options& o) { (void)s.extend_lease(ref("extend"), 120s, o); });
  EXPECT_GT(s.extend_lease(ref("extend"), 120s), claimed.at("extend").leased_until);

  refused([&](const call_options& o) {
    (void)s.extend_leases({ref("extend_many"), ref("extend")}, 120s, o);
  });
  const auto extended = s.extend_leases({ref("extend_many")}, 120s);
  ASSERT_EQ(extended.size(), 1u);
  ASSERT_TRUE(extended[0].has_value());
  EXPECT_GT(*extended[0], claimed.at("extend_many").leased_until);

  refused([&](const call_options& o) { s.mark_delivered(ref("deliver"), o); });
  s.mark_delivered(ref("deliver"));
  EXPECT_EQ(state_of("deliver"), "delivered");

  int fn_runs = 0;
  auto deliver_with_fn = [&](const call_options& o) {
    s.mark_delivered(ref("deliver_fn"), std::function<void(spool::tx&)>([&](spool::tx&) { ++fn_runs; }), o);
  };
  refused(deliver_with_fn);
  EXPECT_EQ(fn_runs, 0);
  deliver_with_fn({});
  EXPECT_EQ(fn_runs, 1);
  EXPECT_EQ(state_of("deliver_fn"), "delivered");

  refused([&](const call_options& o) {
    (void)s.mark_delivered_and_claim_next(ref("k1"), 30s, serialization::by_ordering_key, o);
  });
  const auto next = s.mark_delivered_and_claim_next(ref("k1"), 30s);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->message.id, "k2");
  EXPECT_EQ(state_of("k1"), "delivered");

  refused([&](const call_options& o) {
    s.retry(ref("retry"), retry_at::after(1h), {"sink.timeout", "later"}, o);
  });
  s.retry(ref("retry"), retry_at::after(1h), {"sink.timeout", "later"});
  EXPECT_EQ(state_of("retry"), "pending");
  EXPECT_EQ(count("id = 'retry' AND failure_count = 1"), 1);

  refused([&](const call_options& o) { s.dead_letter(ref("dead"), {"sink_rejected", "no"}, o); });
  s.dead_letter(ref("dead"), {"sink_rejected", "no"});
  EXPECT_EQ(state_of("dead"), "dead");
  // Two more dead rows for the retention calls below.
  s.dead_letter(ref("dead_too"), {"sink_rejected", "no"});
  s.dead_letter(ref("dead_three"), {"sink_rejected", "no"});

  refused([&](const call_options& o) { s.release_lease(ref("release"), o); });
  s.release_lease(ref("release"));
  EXPECT_EQ(state_of("release"), "pending");

  refused([&](const call_options& o) { (void)s.backlog(o); });
  const auto b = s.backlog();
  EXPECT_EQ(b.pending, 2);  // retry, release
  EXPECT_EQ(b.leased, 3);   // k2, extend, extend_many
  EXPECT_EQ(b.dead, 3);

  refused([&](const call_options& o) { (void)s.inspect({}, o); });
  EXPECT_EQ(s.inspect({}).messages.size(), 11u);

  const replay_request replay{{"deliver", "dead"}, "operator", "scenario 16"};
  refused([&](const call_options& o) { (void)s.replay(replay, o); });
  EXPECT_EQ(s.replay(replay).items.size(), 2u);
  EXPECT_EQ(state_of("deliver"), "pending");
  EXPECT_EQ(state_of("dead"), "pending");

  // Terminal now: k1 and deliver_fn delivered, dead_too and dead_three dead.
  // Each archive call below takes the oldest aged row (limit 1), each prune
  // the other one.
  set_terminal_age("k1", "delivered_at", 7200);
  set_terminal_age("deliver_fn", "delivered_at", 3600);
  set_terminal_age("dead_too", "dead_lettered_at", 7200);
  set_terminal_age("dead_three", "dead_lettered_at", 3600);
  const auto aged = cutoff::older_than(1min);
  std::atomic<int> archiver_calls{0};
  const archiver counting = [&](const std::vector<archived_message>&, auto, std::stop_token) {
    ++archiver_calls;
    return archive_outcome{};
  };

  refused([&](const call_options& o) { (void)s.archive_and_prune_delivered(aged, 1, counting, o); });
  EXPECT_EQ(archiver_calls.load(), 0);
  EXPECT_EQ(s.archive_and_prune_delivered(aged, 1, counting), (std::vector<std::string>{"k1"}));
  EXPECT_EQ(archiver_calls.load(), 1);

  refused([&](const call_options& o) { (void)s.prune_delivered(aged, 10, o); });
  EXPECT_EQ(s.prune_delivered(aged, 10), (std::vector<std::string>{"deliver_fn"}));

  refused([&](const call_options& o) { (void)s.archive_and_prune_dead(aged, 1, counting, o); });
  EXPECT_EQ(archiver_calls.load(), 1);
  EXPECT_EQ(s.archive_and_prune_dead(aged, 1, counting), (std::vector<std::string>{"dead_too"}));
  EXPECT_EQ(archiver_calls.load(), 2);

  refused([&](const call_options& o) { (void)s.prune_dead(aged, 10, o); });
  EXPECT_EQ(s.prune_dead(aged, 10), (std::vector<std::string>{"dead_three"}));

  refused([&](const call_options& o) { s.ping(o); });
  s.ping();
}

// Scenario 16: a read-only connection gives not_writable from ping, claim and
// the writer, and changes nothing. PostgreSQL: default_transaction_read_only
// through the URI's options, as a read-only role or a standby would look.
// SQLite: CI runs as root, for whom a 0444 file is still writable, so the
// read-only state comes from SQLite itself: the store's only pooled
// connection gets PRAGMA query_only, and the writer gets application handles
// opened with SQLITE_OPEN_READONLY or under query_only.
TEST_P(outbox_store, a_read_only_connection_gives_not_writable_from_ping_claim_and_the_writer) {
  write({env("x")});
  const std::string before = table_image();
  if (is_pg()) {
    const char* sep = uri_.find('?') == std::string::npos ? "?" : "&";
    auto ro = database::open(uri_ + sep + "options=-c%20default_transaction_read_only%3Don");
    store s(ro);
    EXPECT_OUTBOX_ERROR(s.ping(), errc::invalid_state, "not_writable");
    EXPECT_OUTBOX_ERROR((void)s.claim("relay", 1, 30s), errc::invalid_state, "not_writable");
    writer w(ro);
    pg::tx tx(ro);
    EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("y")), errc::invalid_state, "not_writable");
  } else {
    auto ro = database::open(uri_, {.pool_size = 1});
    store s(ro);
    // Set on the one pooled connection right before each call, so the call
    // meets it even if an earlier failure had the connection replaced.
    auto query_only = [&] { ro.exec("PRAGMA query_only = ON"); };
    query_only();
    EXPECT_OUTBOX_ERROR(s.ping(), errc::invalid_state, "not_writable");
    query_only();
    EXPECT_OUTBOX_ERROR((void)s.claim("relay", 1, 30s), errc::invalid_state, "not_writable");

    const std::string path = uri_.substr(std::string_view("sqlite:").size());
    writer w(ro);
    for (const bool read_only_open : {true, false}) {
      SCOPED_TRACE(read_only_open ? "a handle opened read-only" : "a handle under query_only");
      ::sqlite3* raw = nullptr;
      const int flags = read_only_open ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
      ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, flags, nullptr), SQLITE_OK);
      const std::unique_ptr<::sqlite3, int (*)(::sqlite3*)> handle(raw, sqlite3_close_v2);
      if (!read_only_open)
        ASSERT_EQ(sqlite3_exec(raw, "PRAGMA query_only = ON", nullptr, nullptr, nullptr), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr), SQLITE_OK);
      {
        auto tx = sqlite::adopt(raw);
        EXPECT_OUTBOX_ERROR((void)w.insert(tx, env("y")), errc::invalid_state, "not_writable");
      }
      // The transaction is the application's: Spool neither commits nor rolls it back.
      EXPECT_EQ(sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
    }
  }
  EXPECT_EQ(table_image(), before);
}

TEST_P(outbox_store, a_claim_over_100000_pending_rows_takes_the_oldest_and_reads_only_what_it_claims) {
  // 100,000 due pending rows in claim order, the oldest two turned into
  // expired leases: a claim still takes expired leases and pending rows
  // merged in available_at order.
  if (is_pg()) {
    db_->exec(R"(INSERT INTO outbox_messages (id, topic, payload, payload_version, available_at, created_at)
      SELECT 'p' || g, 't', '\x00', 1, clock_timestamp() - (100001 - g) * interval '1 millisecond',
             clock_timestamp() - (100001 - g) * interval '1 millisecond' FROM generate_series(1, 100000) g)");
    db_->exec("ANALYZE outbox_messages");
  } else {
    db_->exec(R"(WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100000)
      INSERT INTO outbox_messages (id, topic, payload, payload_version, available_at, created_at, updated_at)
      SELECT 'p' || n, 't', x'00', 1, 1000000000000000 + n, 1000000000000000 + n, 1000000000000000 FROM g)");
    db_->exec("ANALYZE");
  }
  store s(*db_);
  const auto first = s.claim("relay", 2, 30s);
  ASSERT_EQ(first.size(), 2u);
  expire_lease(first[0].ref.id);
  expire_lease(first[1].ref.id);
  const auto got = s.claim("relay", 3, 30s);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].ref.id, "p1");
  EXPECT_EQ(got[1].ref.id, "p2");
  EXPECT_EQ(got[2].ref.id, "p3");

  if (!is_pg()) {
    // The candidates statement steps through the rows it returns, not the
    // backlog: sorting every due row took millions of VM steps here. (The
    // PostgreSQL plan is checked in plan_test.cpp.)
    auto names = outbox::detail::names_of(outbox_config{}, engine::sqlite);
    const std::string sql = outbox::detail::render(engine::sqlite, "claim_candidates", names);
    const std::string path = uri_.substr(std::string_view("sqlite:").size());
    ::sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    const std::unique_ptr<::sqlite3, int (*)(::sqlite3*)> handle(raw, sqlite3_close_v2);
    ::sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
    const std::unique_ptr<::sqlite3_stmt, int (*)(::sqlite3_stmt*)> statement(stmt, sqlite3_finalize);
    sqlite3_bind_int64(stmt, 1, 4000000000000000);  // far after every row's available_at
    sqlite3_bind_int64(stmt, 2, 100);
    int rows = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) ++rows;
    EXPECT_EQ(rows, 100);
    EXPECT_LT(sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_VM_STEP, 0), 20000);
  }
}

TEST_P(outbox_store, mark_delivered_with_a_callback_commits_with_it_and_rolls_back_on_throw) {
  db_->exec("CREATE TABLE handoff (id TEXT)");
  write({env("x"), env("y")});
  auto s = make_store();
  auto got = s.claim("relay", 2, 30s);
  const std::string ins = is_pg() ? "INSERT INTO handoff VALUES ($1)" : "INSERT INTO handoff VALUES (?1)";
  auto ok = [&](auto& tx) { tx.exec(ins, {std::string("x")}); };
  auto bad = [&](auto& tx) {
    tx.exec(ins, {std::string("y")});
    throw std::runtime_error("sink failed");
  };
  s.mark_delivered(got[0].ref, std::function<void(spool::tx&)>(ok));
  EXPECT_THROW(s.mark_delivered(got[1].ref, std::function<void(spool::tx&)>(bad)), std::runtime_error);
  EXPECT_EQ(db_->exec("SELECT count(*) FROM handoff").at(0).at(0), "1");
  EXPECT_EQ(state_of("x"), "delivered");
  EXPECT_EQ(state_of("y"), "leased");
}

TEST_P(outbox_store, backlog_equals_direct_counts_and_the_oldest_pending_age) {
  write({env("p1"), env("p2"), env("l1"), env("l2"), env("d1")});
  auto s = make_store();
  auto got = s.claim("relay", 3, 30s);  // p1, p2, l1 by position
  s.release_lease(got[0].ref);
  s.dead_letter(got[2].ref, {"x", "y"});
  expire_lease(got[1].message.id);
  set_terminal_age("p1", "created_at", 60);
  const auto b = s.backlog();
  EXPECT_EQ(b.pending, count("state = 'pending'"));
  EXPECT_EQ(b.leased, 1);
  EXPECT_EQ(b.expired_leases, 1);
  EXPECT_EQ(b.dead, 1);
  ASSERT_TRUE(b.oldest_pending_created_at.has_value());
  EXPECT_GE(b.oldest_pending_age, 59s);
  EXPECT_LT(b.oldest_pending_age, 120s);
}

TEST_P(outbox_store, inspect_pages_through_rows_sharing_a_created_at_without_gaps_or_repeats) {
  std::vector<envelope> batch;
  for (int i = 0; i < 7; ++i) {
    auto e = env("same" + std::to_string(i));
    e.created_at = parse_time("2026-01-01T00:00:00Z");
    batch.push_back(e);
  }
  auto later = env("later");
  later.created_at = parse_time("2026-01-02T00:00:00Z");
  batch.push_back(later);
  write(batch);
  auto s = make_store();
  std::vector<std::string> seen;
  inspect_query q;
  q.limit = 3;
  for (;;) {
    const auto page = s.inspect(q);
    for (const auto& m : page.messages) seen.push_back(m.id);
    if (!page.next) break;
    EXPECT_THROW((void)parse_time(*page.next), spool::error);  // a cursor never parses as a time
    q.before = page.next;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"later", "same6", "same5", "same4", "same3", "same2", "same1",
                                            "same0"}));
  q = {};
  q.before = "2026-01-02T00:00:00Z";
  EXPECT_EQ(s.inspect(q).messages.size(), 7u);
  q.state = message_state::delivered;
  EXPECT_TRUE(s.inspect(q).messages.empty());
  EXPECT_OUTBOX_ERROR((void)s.inspect({.limit = 0}), errc::invalid_argument, "invalid_admin_limit");
  EXPECT_OUTBOX_ERROR((void)parse_message_state("gone"), errc::invalid_argument, "invalid_message_state");
}

TEST_P(outbox_store, replay_resets_terminal_rows_audits_them_and_refuses_all_or_nothing) {
  write({env("dlv"), env("dead"), env("pend")});
  auto s = make_store();
  auto got = s.claim("relay", 2, 30s);
  s.mark_delivered(got[0].ref);
  s.dead_letter(got[1].ref, {"poison", "m"});
  try {
    (void)s.replay({{"dlv", "missing", "pend"}, "ops@example", "redo"});
    ADD_FAILURE() << "no conflict";
  } catch (const replay_conflict& e) {
    EXPECT_EQ(e.code(), errc::conflict);
    EXPECT_EQ(e.reason(), "replay_conflict");
    ASSERT_EQ(e.items().size(), 3u);
    EXPECT_EQ(e.items()[0].second, replay_item_status::replayable);
    EXPECT_EQ(e.items()[1].second, replay_item_status::missing);
    EXPECT_EQ(e.items()[2].second, replay_item_status::pending);
  }
  EXPECT_EQ(state_of("dlv"), "delivered");
  const std::string audit = "SELECT count(*) FROM outbox_messages_replay_audit";
  EXPECT_EQ(db_->exec(audit).at(0).at(0), "0");
  const auto r = s.replay({{"dead", "dlv"}, "ops@example", "sink fixed"});
  ASSERT_EQ(r.items.size(), 2u);
  EXPECT_EQ(r.items[0].second, message_state::dead);
  EXPECT_EQ(r.items[1].second, message_state::delivered);
  EXPECT_EQ(count("state = 'pending' AND claim_count = 0 AND failure_count = 0"), 3);
  const auto rows =
      db_->exec("SELECT outbox_table, previous_state FROM outbox_messages_replay_audit ORDER BY message_id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(*rows[0][0], is_pg() ? "public.outbox_messages" : "main.outbox_messages");
  EXPECT_EQ(*rows[0][1], "dead");
  EXPECT_THROW(db_->exec("DELETE FROM outbox_messages_replay_audit"), spool::error);  // append-only
  // Authorizer: a denial or an exception is replay_unauthorized; bad input fails before it runs.
  bool ran = false;
  auto denying = make_store({.replay_authorizer = [&](const replay_request&) {
    ran = true;
    return false;
  }});
  EXPECT_OUTBOX_ERROR((void)denying.replay({{"dlv"}, "a", "b"}), errc::unauthorized, "replay_unauthorized");
  EXPECT_TRUE(ran);
  auto throwing =
      make_store({.replay_authorizer = [](const replay_request&) -> bool { throw std::runtime_error("x"); }});
  EXPECT_OUTBOX_ERROR((void)throwing.replay({{"dlv"}, "a", "b"}), errc::unauthorized, "replay_unauthorized");
  ran = false;
  replay_request y10k{{"dlv"}, "a", "b", max_time() + std::chrono::microseconds(1)};
  EXPECT_OUTBOX_ERROR((void)denying.replay(y10k), errc::invalid_argument, "timestamp_out_of_range");
  EXPECT_FALSE(ran);
  EXPECT_OUTBOX_ERROR((void)s.replay({{}, "a", "b"}), errc::invalid_argument, "replay_ids_required");
  EXPECT_OUTBOX_ERROR((void)s.replay({{"x"}, "", "b"}), errc::invalid_argument, "replay_requester_required");
  EXPECT_OUTBOX_ERROR((void)s.replay({{"x"}, "a", ""}), errc::invalid_argument, "replay_reason_required");
  EXPECT_OUTBOX_ERROR((void)s.replay({{"x", "x"}, "a", "b"}), errc::invalid_argument, "replay_duplicate_id");
}

TEST_P(outbox_store, prune_cutoff_is_strict_in_both_terminal_states_and_other_states_are_untouched) {
  write({env("d_old"), env("d_new"), env("x_old"), env("p"), env("l")});
  auto s = make_store();
  auto got = s.claim("relay", 5, 30s);
  s.mark_delivered(got[0].ref);
  s.mark_delivered(got[1].ref);
  s.dead_letter(got[2].ref, {"x", "y"});
  s.release_lease(got[3].ref);
  set_terminal_age("d_old", "delivered_at", 7200);
  set_terminal_age("x_old", "dead_lettered_at", 7200);
  set_terminal_age("p", "created_at", 7200);
  EXPECT_OUTBOX_ERROR((void)s.prune_delivered({}, 10), errc::invalid_argument, "prune_cutoff_required");
  EXPECT_OUTBOX_ERROR((void)s.prune_delivered(cutoff::older_than(1h), 0), errc::invalid_argument,
                      "invalid_admin_limit");
  // Strict: a cutoff equal to the row's terminal time keeps it.
  const auto exact =
      db_->exec(is_pg() ? "SELECT (extract(epoch FROM date_trunc('second', delivered_at))::bigint * 1000000 "
                          "+ extract(microseconds FROM delivered_at)::bigint % 1000000) FROM outbox_messages "
                          "WHERE id = 'd_old'"
                        : "SELECT delivered_at FROM outbox_messages WHERE id = 'd_old'");
  const auto at = time_point(std::chrono::microseconds(std::stoll(*exact[0][0])));
  EXPECT_TRUE(s.prune_delivered(cutoff::before(at), 10).empty());
  EXPECT_EQ(s.prune_delivered(cutoff::before(at + std::chrono::microseconds(1)), 10),
            (std::vector<std::string>{"d_old"}));
  EXPECT_EQ(s.prune_dead(cutoff::older_than(1h), 10), (std::vector<std::string>{"x_old"}));
  EXPECT_EQ(count(), 3);  // d_new, p, l
}

TEST_P(outbox_store,
       a_failing_throwing_or_overrunning_archiver_deletes_nothing_and_a_working_one_gets_the_aged_rows) {
  write({env("a"), env("b"), env("c")});
  auto s = make_store({.archive_deadline = 1s});
  auto got = s.claim("relay", 3, 30s);
  for (const auto& c : got) s.mark_delivered(c.ref);
  set_terminal_age("a", "delivered_at", 7200);
  set_terminal_age("b", "delivered_at", 7200);
  const auto cut = cutoff::older_than(1h);
  EXPECT_OUTBOX_ERROR((void)s.archive_and_prune_delivered(cut, 10, archiver{}), errc::invalid_argument,
                      "archiver_required");
  auto failing = [](const std::vector<archived_message>&, auto, std::stop_token) {
    return archive_outcome{false, "disk full"};
  };
  auto throwing = [](const std::vector<archived_message>&, auto, std::stop_token) -> archive_outcome {
    throw std::runtime_error("boom");
  };
  auto slow = [](const std::vector<archived_message>&, auto, std::stop_token st) {
    for (int i = 0; i < 300 && !st.stop_requested(); ++i) std::this_thread::sleep_for(10ms);
    return archive_outcome{};
  };
  EXPECT_OUTBOX_ERROR((void)s.archive_and_prune_delivered(cut, 10, failing), errc::unavailable,
                      "archiver_failed");
  EXPECT_OUTBOX_ERROR((void)s.archive_and_prune_delivered(cut, 10, throwing), errc::unavailable,
                      "archiver_threw");
  EXPECT_OUTBOX_ERROR((void)s.archive_and_prune_delivered(cut, 10, slow), errc::unavailable,
                      "archive_timeout");
  EXPECT_EQ(count(), 3);
  std::vector<std::string> archived;
  auto working = [&](const std::vector<archived_message>& b, auto, std::stop_token) {
    for (const auto& m : b) {
      archived.push_back(m.message.id);
      EXPECT_EQ(m.state, message_state::delivered);
      EXPECT_EQ(m.message.payload, "{\"n\":1}");
    }
    return archive_outcome{};
  };
  // A generous deadline here: this archiver captures the test's locals, and
  // one that overran would be left running after them.
  auto patient = make_store({.archive_deadline = 60s});
  auto deleted = patient.archive_and_prune_delivered(cut, 10, working);
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(archived, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(deleted, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(count(), 1);
  bool called = false;
  auto never = [&](const std::vector<archived_message>&, auto, std::stop_token) {
    called = true;
    return archive_outcome{};
  };
  EXPECT_TRUE(s.archive_and_prune_delivered(cut, 10, never).empty());
  EXPECT_FALSE(called);
}

TEST_P(outbox_store, every_transition_emits_an_event_without_text_and_a_throwing_observer_changes_nothing) {
  std::vector<event> events;
  std::mutex m;
  auto s = make_store({.observer = [&](const event& e) {
    {
      std::lock_guard lock(m);
      events.push_back(e);
    }
    throw std::runtime_error("observer bug");
  }});
  write({env("a"), env("b"), env("c"), env("d")});
  auto got = s.claim("relay", 4, 30s);
  ASSERT_EQ(got.size(), 4u);
  (void)s.extend_lease(got[0].ref, 30s);
  s.mark_delivered(got[0].ref);
  s.retry(got[1].ref, retry_at::after(1h), {"e", "secret text"});
  s.dead_letter(got[2].ref, {"e", "secret text"});
  s.release_lease(got[3].ref);
  EXPECT_OUTBOX_ERROR(s.release_lease(got[3].ref), errc::lease_lost, "lease_lost");
  (void)s.replay({{"a"}, "ops", "why"});
  (void)s.prune_dead(cutoff::older_than(0s), 10);
  std::vector<std::string> ops;
  for (const auto& e : events) {
    ops.push_back(std::string(to_string(e.op)) + (e.ok ? "" : ":" + e.reason));
    EXPECT_GE(e.duration.count(), 0);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"claim", "extend", "deliver", "retry", "dead", "release",
                                           "release:lease_lost", "replay", "prune"}));
  EXPECT_EQ(events[3].message_id, "b");
  EXPECT_EQ(events[3].topic, "t");
  EXPECT_EQ(events[3].failure_count, 1u);
  EXPECT_EQ(s.observer_failures(), events.size());
}

}  // namespace
}  // namespace spool::test
