// op-queue.md §9 scenarios 14, 15 and 25 (not_before), and 34: time-zone
// independence on SQLite, with TZ east and west of UTC.
#include "ops/ops_fixture.hpp"

namespace spool::test {
namespace {

class ops_scheduling : public ops_conformance {};

// The same instant written with three offsets, two hours ahead.
void same_instant_reads_back_and_is_not_dequeuable(ops::queue& q, bool whole_seconds) {
  const auto base = std::chrono::floor<std::chrono::seconds>(utc_now()) + 2h;
  const std::string utc = ops::format_time(base);
  // Render the same instant in UTC+3 and UTC−5 by hand.
  auto render = [&](std::chrono::minutes offset) {
    const auto local = base + offset;
    const auto d = std::chrono::floor<std::chrono::days>(local);
    const std::chrono::year_month_day ymd{d};
    const std::chrono::hh_mm_ss t{local - d};
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02ld:%02ld:%02ld%c%02ld:%02ld",
                  static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                  static_cast<unsigned>(ymd.day()), static_cast<long>(t.hours().count()),
                  static_cast<long>(t.minutes().count()), static_cast<long>(t.seconds().count()),
                  offset.count() < 0 ? '-' : '+', static_cast<long>(std::abs(offset.count()) / 60),
                  static_cast<long>(std::abs(offset.count()) % 60));
    return std::string(buf);
  };
  std::vector<std::string> ids;
  for (const std::string text : {utc, render(3h), render(-5h)}) {
    auto o = new_op("later");
    o.not_before = ops::parse_time(text);
    ids.push_back(q.enqueue(o).id);
  }
  for (const auto& id : ids) {
    const auto o = q.get(id);
    ASSERT_TRUE(o.not_before);
    EXPECT_EQ(*o.not_before, base) << ops::format_time(*o.not_before);
  }
  (void)whole_seconds;
  EXPECT_FALSE(q.dequeue());
}

void due_in_two_seconds_is_held_then_released(ops::queue& q) {
  auto o = new_op("soon");
  o.delay = 2s;
  const auto id = q.enqueue(o).id;
  EXPECT_FALSE(q.dequeue());
  std::optional<ops::op> got;
  const auto start = std::chrono::steady_clock::now();
  while (!got && std::chrono::steady_clock::now() - start < 10s) {
    got = q.dequeue();
    if (!got) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(got) << "not released within 10 s";
  EXPECT_EQ(got->id, id);
  // Held until due, on the database's clock: the claim is not before not_before.
  ASSERT_TRUE(got->started_at.has_value() && got->not_before.has_value());
  EXPECT_GE(*got->started_at, *got->not_before);
}

TEST_P(ops_scheduling,
       TheSameInstantGivenInThreeZonesReadsBackAsThatInstantAndIsNotDequeuable) {  // §9.14, §9.25
  same_instant_reads_back_and_is_not_dequeuable(q(), !is_pg());
}

TEST_P(ops_scheduling, AnOpDueInTwoSecondsIsHeldAndThenReleasedWithinTenSeconds) {  // §9.15
  due_in_two_seconds_is_held_then_released(q());
}

TEST_P(ops_scheduling, AnAbsoluteNotBeforeInThePastIsReadyAtOnce) {
  auto o = new_op("past");
  o.not_before = utc_now() - 1h;
  const auto id = q().enqueue(o).id;
  EXPECT_EQ(claim().id, id);
}

TEST_P(ops_scheduling, NotBeforeAndDelayTogetherAreInvalid) {
  auto o = new_op("x");
  o.not_before = utc_now();
  o.delay = 1s;
  EXPECT_ERRC(q().enqueue(o), errc::invalid_argument);
}

TEST_P(ops_scheduling, ANotBeforeWithAFractionIsNeverReleasedEarly) {
  auto o = new_op("x");
  const auto at = std::chrono::floor<std::chrono::seconds>(utc_now()) + 1h + 250ms;
  o.not_before = at;
  const auto back = q().get(q().enqueue(o).id);
  ASSERT_TRUE(back.not_before);
  if (is_pg()) {
    EXPECT_EQ(*back.not_before, at);
  } else {
    EXPECT_EQ(*back.not_before, std::chrono::ceil<std::chrono::seconds>(at));
  }
}

TEST_P(ops_scheduling, FailWithAnAbsoluteTimeOrADelaySchedulesTheRetry) {
  enqueue("t");
  auto c = claim();
  const auto at = std::chrono::floor<std::chrono::seconds>(utc_now()) + 1h;
  EXPECT_EQ(q().fail(c.id, *c.lease_token, "later", at), ops::op_status::pending);
  EXPECT_EQ(q().get(c.id).not_before, at);
  EXPECT_FALSE(q().dequeue());
  EXPECT_ERRC(q().retry(c.id), errc::invalid_state);  // pending, not failed
}

SPOOL_OPS_BOTH_ENGINES(ops_scheduling);

// ---- §9.34: SQLite in processes east and west of UTC ----

struct zone {
  const char* tz;
  long offset_s;
};

class ops_sqlite_timezone : public ::testing::TestWithParam<zone> {
 protected:
  void SetUp() override {
    uri_ = dir_.sqlite_uri();
    db_.emplace(database::open(uri_));
    ops::migrate(*db_);
    q_.emplace(*db_);
  }
  temp_dir dir_;
  std::string uri_;
  std::optional<database> db_;
  std::optional<ops::queue> q_;
};

TEST_P(ops_sqlite_timezone, FailWithRetrySchedulesThirtySecondsAheadWhateverTheZone) {  // §9.4 under TZ
  scoped_tz tz(GetParam().tz, GetParam().offset_s);
  ASSERT_TRUE(tz.took_effect());
  q_->enqueue(new_op("t"));
  auto c = q_->dequeue();
  ASSERT_TRUE(c);
  q_->fail(c->id, *c->lease_token, "boom", true);
  const auto o = q_->get(c->id);
  ASSERT_TRUE(o.not_before);
  EXPECT_LE(std::chrono::abs(*o.not_before - (utc_now() + 30s)), 2s) << ops::format_time(*o.not_before);
  EXPECT_FALSE(q_->dequeue());
}

TEST_P(ops_sqlite_timezone, TheSameInstantInThreeZonesReadsBackWhateverTheZone) {  // §9.14 under TZ
  scoped_tz tz(GetParam().tz, GetParam().offset_s);
  ASSERT_TRUE(tz.took_effect());
  same_instant_reads_back_and_is_not_dequeuable(*q_, true);
}

TEST_P(ops_sqlite_timezone, AnOpDueInTwoSecondsIsReleasedOnTimeWhateverTheZone) {  // §9.15 under TZ
  scoped_tz tz(GetParam().tz, GetParam().offset_s);
  ASSERT_TRUE(tz.took_effect());
  due_in_two_seconds_is_held_then_released(*q_);
}

TEST_P(ops_sqlite_timezone, ARescueByHeartbeatAgeWaitsForTheLeaseWhateverTheZone) {  // §9.34 rescue
  scoped_tz tz(GetParam().tz, GetParam().offset_s);
  ASSERT_TRUE(tz.took_effect());
  q_->enqueue(new_op("t"));
  auto c = q_->dequeue();
  ASSERT_TRUE(c);
  // A fresh heartbeat is never taken, even with a lease far shorter than the zone offset.
  EXPECT_TRUE(q_->rescue_expired(60s).empty());
  const auto heartbeat = q_->get(c->id).heartbeat_at;
  ASSERT_TRUE(heartbeat.has_value());
  const auto start = std::chrono::steady_clock::now();
  std::vector<ops::rescued_op> rescued;
  while (rescued.empty() && std::chrono::steady_clock::now() - start < 8s) {
    rescued = q_->rescue_expired(1s);
    if (rescued.empty()) std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(rescued.size(), 1u);
  // Taken only once its heartbeat was a lease old, on the database's clock
  // (whole seconds on SQLite): a premature rescue would show an age of 0.
  const auto now_s = std::stoll(*db_->exec("SELECT strftime('%s', 'now')").at(0).at(0));
  EXPECT_GE(now_s - std::chrono::duration_cast<std::chrono::seconds>(heartbeat->time_since_epoch()).count(),
            1);
  EXPECT_EQ(rescued[0].status, ops::op_status::pending);
}

TEST_P(ops_sqlite_timezone, DoneInTheLastDayCountsWhateverTheZone) {  // §9.34 done_24h
  scoped_tz tz(GetParam().tz, GetParam().offset_s);
  ASSERT_TRUE(tz.took_effect());
  q_->enqueue(new_op("t"));
  auto c = q_->dequeue();
  ASSERT_TRUE(c);
  q_->ack(c->id, *c->lease_token);
  EXPECT_EQ(q_->stats().done_24h, 1);
  const auto o = q_->get(c->id);
  ASSERT_TRUE(o.finished_at);
  EXPECT_LE(std::chrono::abs(*o.finished_at - utc_now()), 2s) << ops::format_time(*o.finished_at);
}

// POSIX inverts the sign: Etc/GMT-3 is UTC+3.
INSTANTIATE_TEST_SUITE_P(zones, ops_sqlite_timezone,
                         ::testing::Values(zone{"Etc/GMT-3", 3 * 3600}, zone{"Etc/GMT+5", -5 * 3600},
                                           zone{"UTC", 0}),
                         [](const auto& info) {
                           const std::string tz = info.param.tz;
                           return tz == "UTC"
                                      ? std::string("utc")
                                      : (info.param.offset_s > 0 ? std::string("east") : std::string("west"));
                         });

}  // namespace
}  // namespace spool::test
