// Forged page cursors (issue 7): a cursor is opaque to callers but decodes to
// values that reach SQL. A well-formed cursor carrying a hostile id must act
// as a bound value — a page of existing rows, nothing changed — or be refused
// with a typed error; never run as SQL.
#include "hostile/hostile_fixture.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/store.hpp"
#include "spool/outbox/writer.hpp"
#include "spool/pg.hpp"
#include "spool/sqlite.hpp"

namespace spool::test {
namespace {

using hostile_cursor = hostile;

// base64url without padding, as both cursors spell it.
std::string b64url(const std::string& in) {
  static constexpr char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t buf = 0;
  int bits = 0;
  for (unsigned char c : in) {
    buf = (buf << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += abc[(buf >> bits) & 63];
    }
  }
  if (bits > 0) out += abc[(buf << (6 - bits)) & 63];
  return out;
}

std::string unb64url(const std::string& in) {
  static const std::string abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t buf = 0;
  int bits = 0;
  for (char c : in) {
    buf = (buf << 6) | static_cast<std::uint32_t>(abc.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buf >> bits) & 0xff);
    }
  }
  return out;
}

TEST_P(hostile_cursor, a_forged_ops_cursor_with_a_hostile_id_pages_existing_ops_and_changes_nothing) {
  ops::queue q(*db_);
  for (const char* id : {"a", "b", "c"}) q.enqueue(ops::new_op{.id = id, .type = "t"});
  // A real cursor gives the time part ("c1.<time>.<id>").
  const auto first = q.list_after("", 1);
  ASSERT_FALSE(first.next_cursor.empty());
  const auto rest = first.next_cursor.substr(3);
  const std::string at = rest.substr(0, rest.find('.'));
  ASSERT_EQ(b64url(unb64url(at)), at) << "the test's codec matches the cursor's";
  const auto before = take_fingerprint();
  const auto rows_before = db_->exec("SELECT * FROM ops_queue ORDER BY id");
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    const std::string forged = "c1." + at + "." + b64url(s);
    try {
      const auto page = q.list_after("", 100, forged);
      for (const auto& o : page.ops) EXPECT_TRUE(o.id == "a" || o.id == "b" || o.id == "c") << o.id;
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      // Refused before SQL: the cursor decoder rejects an id no op can have
      // (control characters, NUL, invalid UTF-8, over 255 bytes), or the
      // engine layer refuses the bound value.
      const bool malformed = std::string_view(e.what()).find("malformed cursor") != std::string_view::npos;
      EXPECT_TRUE(malformed || refused_by_engine(s)) << e.what();
    }
  }
  EXPECT_EQ(db_->exec("SELECT * FROM ops_queue ORDER BY id"), rows_before);
  expect_only(before, take_fingerprint(), {}, "nothing changed");
}

TEST_P(hostile_cursor, a_forged_outbox_cursor_with_a_hostile_id_pages_existing_rows_and_changes_nothing) {
  outbox::writer w(*db_);
  std::vector<outbox::envelope> batch;
  for (const char* id : {"a", "b", "c"}) {
    outbox::envelope e;
    e.id = id;
    e.topic = "t";
    batch.push_back(e);
  }
  if (is_pg()) {
    pg::tx tx(*db_);
    (void)w.insert_batch(tx, batch);
    tx.commit();
  } else {
    sqlite::tx tx(*db_);
    (void)w.insert_batch(tx, batch);
    tx.commit();
  }
  outbox::store st(*db_);
  outbox::inspect_query first_q;
  first_q.limit = 1;
  const auto first = st.inspect(first_q);
  ASSERT_TRUE(first.next.has_value());
  const auto raw = unb64url(first.next->substr(1));  // "c<base64url(µs:id)>"
  const std::string us = raw.substr(0, raw.find(':'));
  const auto before = take_fingerprint();
  const auto rows_before = db_->exec("SELECT * FROM outbox_messages ORDER BY id");
  for (const auto& s : hostile_strings()) {
    SCOPED_TRACE(shown(s));
    outbox::inspect_query q;
    q.before = "c" + b64url(us + ":" + s);
    try {
      const auto page = st.inspect(q);
      for (const auto& m : page.messages) EXPECT_TRUE(m.id == "a" || m.id == "b" || m.id == "c") << m.id;
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_TRUE(refused_by_engine(s) || s.size() > 255) << e.what();
    }
  }
  EXPECT_EQ(db_->exec("SELECT * FROM outbox_messages ORDER BY id"), rows_before);
  expect_only(before, take_fingerprint(), {}, "nothing changed");
}

SPOOL_HOSTILE_BOTH_ENGINES(hostile_cursor);

}  // namespace
}  // namespace spool::test
