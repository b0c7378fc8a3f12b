// op-queue.md §9 scenario 36 (payload fidelity) and the validation rules of §3.
#include <limits>
#include <set>

#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

class ops_payload : public ops_conformance {};

TEST_P(ops_payload, SixtyFourBitIntegersRoundTripExactly) {  // §9.36
  const nlohmann::json payload = {{"p53", (std::int64_t{1} << 53) + 1},
                                  {"min", std::numeric_limits<std::int64_t>::min()},
                                  {"max", std::numeric_limits<std::int64_t>::max()},
                                  {"umax", std::numeric_limits<std::uint64_t>::max()},
                                  {"half", 0.5},
                                  {"text", "héllo ✓"}};
  const auto id = q().enqueue(new_op("t", payload)).id;
  const auto back = q().get(id).payload;
  EXPECT_EQ(back["p53"].get<std::int64_t>(), (std::int64_t{1} << 53) + 1);
  EXPECT_EQ(back["min"].get<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(back["max"].get<std::int64_t>(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(back["umax"].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(back, payload);
  EXPECT_EQ(claim().payload, payload);
}

TEST_P(ops_payload, ANonObjectAPayloadWithNulAndAnOversizedPayloadAreInvalidAndWriteNothing) {  // §9.36
  EXPECT_ERRC(q().enqueue(new_op("t", nlohmann::json::array({1, 2}))), errc::invalid_argument);
  EXPECT_ERRC(q().enqueue(new_op("t", "just a string")), errc::invalid_argument);
  EXPECT_ERRC(q().enqueue(new_op("t", {{"s", std::string("a\0b", 3)}})), errc::invalid_argument);
  EXPECT_ERRC(q().enqueue(new_op("t", {{std::string("k\0", 2), 1}})), errc::invalid_argument);
  auto small = make_queue({.max_payload_bytes = 64});
  EXPECT_ERRC(small->enqueue(new_op("t", {{"blob", std::string(100, 'x')}})), errc::invalid_argument);
  EXPECT_EQ(count(), 0);
}

TEST_P(ops_payload, NoPayloadMeansAnEmptyObject) {
  auto o = new_op("t");
  o.payload = nullptr;
  EXPECT_EQ(q().get(q().enqueue(o).id).payload, nlohmann::json::object());
}

TEST_P(ops_payload, InvalidUtf8InAPayloadIsInvalidArgument) {
  EXPECT_ERRC(q().enqueue(new_op("t", {{"s", std::string("\xc3\x28")}})), errc::invalid_argument);
}

TEST_P(ops_payload, TypesIdsAndMaxAttemptsAreValidated) {
  EXPECT_ERRC(q().enqueue(new_op("")), errc::invalid_argument);
  EXPECT_ERRC(q().enqueue(new_op(std::string(256, 't'))), errc::invalid_argument);
  EXPECT_ERRC(q().enqueue(new_op("new\nline")), errc::invalid_argument);
  auto o = new_op("t");
  o.max_attempts = -1;
  EXPECT_ERRC(q().enqueue(o), errc::invalid_argument);
  o.max_attempts = 0;
  EXPECT_EQ(q().get(q().enqueue(o).id).max_attempts, 3);
  o.id = std::string(256, 'i');
  EXPECT_ERRC(q().enqueue(o), errc::invalid_argument);
  o.id = "bad\x01id";
  EXPECT_ERRC(q().enqueue(o), errc::invalid_argument);
  EXPECT_NO_THROW(q().enqueue(new_op(std::string(255, 't'))));
}

TEST_P(ops_payload, ACallerIdIsHonouredAndATakenIdIsAlreadyExists) {
  auto o = new_op("t");
  o.id = "order-42";
  EXPECT_EQ(q().enqueue(o), (ops::enqueue_result{"order-42", true, ops::enqueue_status::created}));
  EXPECT_ERRC(q().enqueue(o), errc::already_exists);
  EXPECT_EQ(count(), 1);
}

TEST_P(ops_payload, GeneratedIdsAre32LowercaseHexCharactersAndDistinct) {
  std::set<std::string> ids;
  for (int i = 0; i < 50; ++i) {
    const auto id = enqueue("t");
    EXPECT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 50u);
}

TEST_P(ops_payload, AStoredPayloadThatIsNotAnObjectIsReturnedWithADefect) {
  if (is_pg()) {
    sql("INSERT INTO ops_queue (id, type, payload) VALUES ('d1', 't', '[1,2]'::jsonb)");
  } else {
    sql("INSERT INTO ops_queue (id, type, payload) VALUES ('d1', 't', 'not json at all')");
  }
  const auto o = q().get("d1");
  ASSERT_TRUE(o.defect);
  EXPECT_NE(o.defect->find("payload"), std::string::npos) << *o.defect;
  EXPECT_EQ(o.payload, nlohmann::json::object());
  // It is claimed like any other op; the pool fails it terminally.
  const auto c = claim();
  EXPECT_EQ(c.id, "d1");
  EXPECT_TRUE(c.defect);
}

TEST_P(ops_payload, AnUnknownStatusIsReadAsUnknownNeverClaimedAndShownInJson) {
  sql("INSERT INTO ops_queue (id, type, status) VALUES ('u1', 't', 'paused')");
  const auto o = q().get("u1");
  EXPECT_EQ(o.status, ops::op_status::unknown);
  EXPECT_EQ(o.status_text, "paused");
  EXPECT_TRUE(o.defect);
  EXPECT_EQ(ops::to_json(o)["status"], "paused");
  EXPECT_FALSE(q().dequeue());
}

SPOOL_OPS_BOTH_ENGINES(ops_payload);

}  // namespace
}  // namespace spool::test
