// Invalid UTF-8 in every string field (issue 7): a typed error naming the
// field and nothing changed — except where the spec says bytes are opaque
// (the outbox payload), which is stored byte-exact, and the texts a store
// sanitises on purpose (ops failure messages: U+FFFD).
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

using namespace std::chrono_literals;
using bad_utf8 = hostile;

// Ill-formed sequences: a lone continuation byte, 0xFF, an overlong '/', a
// UTF-16 surrogate, a truncated sequence, a 5-byte form, a code point above
// U+10FFFF — each inside otherwise valid text.
std::vector<std::string> invalid_utf8() {
  return {"ok\x80",          "\xff", "a\xc0\xaf", "\xed\xa0\x80", "trunc\xe2\x82", "\xf8\x88\x80\x80\x80",
          "\xf4\x90\x80\x80"};
}

TEST_P(bad_utf8, every_mq_message_string_with_invalid_utf8_is_invalid_argument_naming_the_field) {
  mq::queue_options o;
  o.name = "q";
  mq::queue q(*db_, o);
  using setter = void (*)(mq::message&, const std::string&);
  const std::vector<std::pair<std::string, setter>> fields = {
      {"id", [](mq::message& m, const std::string& v) { m.id = v; }},
      {"messageGroupId", [](mq::message& m, const std::string& v) { m.message_group_id = v; }},
      {"poolCode", [](mq::message& m, const std::string& v) { m.pool_code = v; }},
      {"authToken", [](mq::message& m, const std::string& v) { m.auth_token = v; }},
      {"signingSecret", [](mq::message& m, const std::string& v) { m.signing_secret = v; }},
      {"mediationType", [](mq::message& m, const std::string& v) { m.mediation_type = v; }},
      {"mediationTarget", [](mq::message& m, const std::string& v) { m.mediation_target = v; }},
      {"dispatchMode", [](mq::message& m, const std::string& v) { m.dispatch_mode = v; }},
      {"x",
       [](mq::message& m, const std::string& v) {
         m.extra.push_back({"x", "\"" + v + "\""});
       }},
      {"extra",
       [](mq::message& m, const std::string& v) {
         m.extra.push_back({v, "1"});
       }},
  };
  const auto before = take_fingerprint();
  for (const auto& [field, set] : fields) {
    for (const auto& bad : invalid_utf8()) {
      SCOPED_TRACE(field + " = " + shown(bad));
      mq::message m;
      m.id = "m";
      set(m, bad);
      try {
        q.publish(m);
        ADD_FAILURE() << "published";
      } catch (const spool::error& e) {
        EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << "names the field: " << e.what();
      }
      in_tx(*db_, [&](auto& tx) {
        EXPECT_SPOOL_ERROR(mq::insert_batch(tx, {{"q", m}}), errc::invalid_argument);
      });
    }
  }
  expect_only(before, take_fingerprint(), {}, "nothing inserted");
}

TEST_P(bad_utf8, an_mq_queue_name_or_redrive_text_with_invalid_utf8_is_invalid_argument_and_changes_nothing) {
  const auto before = take_fingerprint();
  for (const auto& bad : invalid_utf8()) {
    SCOPED_TRACE(shown(bad));
    mq::queue_options o;
    o.name = bad;
    try {
      mq::queue q(*db_, o);
      mq::message m;
      m.id = "m";
      q.publish(m);
      ADD_FAILURE() << "a queue name with invalid UTF-8 was accepted";
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find("queue name"), std::string::npos) << e.what();
    }
    mq::queue_options ok;
    ok.name = "q";
    mq::queue q(*db_, ok);
    mq::redrive_options r;
    r.ids = {bad};
    r.reason = bad;
    r.actor = bad;
    try {
      const auto res = q.redrive(r);
      EXPECT_EQ(res.missing, std::vector<std::string>{bad});
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
  }
  expect_only(before, take_fingerprint(), {}, "nothing changed");
}

TEST_P(bad_utf8, every_op_string_with_invalid_utf8_is_invalid_argument_and_failure_messages_become_u_fffd) {
  ops::queue q(*db_);
  const auto before = take_fingerprint();
  for (const auto& bad : invalid_utf8()) {
    SCOPED_TRACE(shown(bad));
    auto expect_field = [&](const std::string& field, const ops::new_op& o) {
      try {
        q.enqueue(o);
        ADD_FAILURE() << field << ": enqueued";
      } catch (const spool::error& e) {
        EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      }
      EXPECT_SPOOL_ERROR((void)q.enqueue_batch({ops::new_op{.type = "t"}, o}), errc::invalid_argument);
    };
    expect_field("type", ops::new_op{.type = bad});
    expect_field("id", ops::new_op{.id = bad, .type = "t"});
    expect_field("dedup_key", ops::new_op{.type = "t", .dedup_key = bad});
    expect_field("payload", ops::new_op{.type = "t", .payload = {{"k", bad}}});
    expect_field("payload", ops::new_op{.type = "t", .payload = {{bad, 1}}});
    // Lookups, owners and filters with invalid UTF-8 change nothing.
    try {
      (void)q.get(bad);
      ADD_FAILURE() << "found";
    } catch (const spool::error& e) {
      EXPECT_TRUE(e.code() == errc::not_found || e.code() == errc::invalid_argument) << e.what();
    }
    try {
      EXPECT_FALSE(q.dequeue({bad}, bad).has_value());
    } catch (const spool::error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
  }
  expect_only(before, take_fingerprint(), {}, "nothing inserted");

  // op-queue.md §4.5: a failure message is stored with U+FFFD for each bad byte.
  q.enqueue(ops::new_op{.id = "f", .type = "t"});
  const auto claim = q.dequeue({"t"});
  ASSERT_TRUE(claim.has_value());
  q.fail("f", *claim->lease_token, "bad \xff end", false);
  EXPECT_EQ(q.get("f").last_error, "bad \xef\xbf\xbd end");
}

TEST_P(bad_utf8, every_outbox_string_with_invalid_utf8_is_invalid_encoding_but_the_payload_is_opaque_bytes) {
  outbox::writer w(*db_);
  const auto before = take_fingerprint();
  for (const auto& bad : invalid_utf8()) {
    SCOPED_TRACE(shown(bad));
    auto base = [] {
      outbox::envelope e;
      e.id = "e";
      e.topic = "t";
      return e;
    };
    std::vector<std::pair<std::string, outbox::envelope>> cases;
    cases.push_back({"id", base()});
    cases.back().second.id = bad;
    cases.push_back({"topic", base()});
    cases.back().second.topic = bad;
    cases.push_back({"ordering_key", base()});
    cases.back().second.ordering_key = bad;
    cases.push_back({"idempotency_key", base()});
    cases.back().second.idempotency_key = bad;
    cases.push_back({"metadata", base()});
    cases.back().second.metadata["k"] = bad;
    cases.push_back({"metadata", base()});
    cases.back().second.metadata[bad] = "v";
    for (const auto& [field, e] : cases) {
      SCOPED_TRACE(field);
      in_tx(*db_, [&](auto& tx) {
        try {
          (void)w.insert(tx, e);
          ADD_FAILURE() << "written";
        } catch (const spool::error& err) {
          EXPECT_EQ(err.code(), errc::invalid_argument) << err.what();
          EXPECT_EQ(err.reason(), "invalid_encoding") << err.what();
          EXPECT_NE(std::string(err.what()).find(field), std::string::npos) << err.what();
        }
      });
    }
    // Store inputs: an owner, a replay requester or reason with invalid UTF-8.
    outbox::store st(*db_);
    try {
      EXPECT_TRUE(st.claim(bad, 1, 60s).empty());
    } catch (const spool::error& err) {
      EXPECT_EQ(err.code(), errc::invalid_argument) << err.what();
    }
  }
  expect_only(before, take_fingerprint(), {}, "nothing written");

  // outbox.md §2: the payload is opaque bytes, stored and delivered exactly.
  std::string bytes;
  for (const auto& bad : invalid_utf8()) bytes += bad;
  bytes += std::string("\0\x01\xfe", 3);
  outbox::envelope e;
  e.id = "opaque";
  e.topic = "t";
  e.payload = bytes;
  in_tx(*db_, [&](auto& tx) { (void)w.insert(tx, e); });
  outbox::store st(*db_);
  const auto got = st.claim("relay", 1, 60s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message.payload, bytes);
}

SPOOL_HOSTILE_BOTH_ENGINES(bad_utf8);

}  // namespace
}  // namespace spool::test
