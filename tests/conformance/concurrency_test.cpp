// Many consumers on one database (scenarios 26 and 30): nothing lost, nothing
// delivered twice inside a window, crashed consumers' messages redelivered.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <set>

#include "conformance/mq_fixture.hpp"

namespace spool::test {

using namespace std::chrono_literals;
using mq_concurrency = mq_conformance;

TEST_P(mq_concurrency, eight_concurrent_consumers_drain_forty_messages_none_lost_none_twice) {
  auto q = make_queue({.visibility_timeout = 60s});
  std::vector<mq::message> batch;
  for (int i = 0; i < 40; ++i) batch.push_back(msg(fmt_id(i), "g" + std::to_string(i % 7)));
  q->publish_batch(batch);

  std::mutex mutex;
  std::map<std::string, int> deliveries;
  std::vector<std::thread> consumers;
  for (int w = 0; w < 8; ++w) {
    consumers.emplace_back([&] {
      int idle = 0;
      while (idle < 20) {
        auto got = q->poll(3);
        if (got.empty()) {
          ++idle;
          std::this_thread::sleep_for(20ms);
          continue;
        }
        idle = 0;
        for (const auto& d : got) {
          {
            std::lock_guard lock(mutex);
            ++deliveries[d.broker_message_id];
          }
          q->ack(d.receipt);
        }
      }
    });
  }
  for (auto& t : consumers) t.join();
  EXPECT_EQ(deliveries.size(), 40u);
  for (const auto& [id, n] : deliveries) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(count("queue_messages"), 0);
}

TEST_P(mq_concurrency, a_killed_consumers_messages_go_to_another_consumer_after_the_window) {
  auto q = make_queue({.visibility_timeout = 3s});
  std::vector<mq::message> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(msg(fmt_id(i)));
  q->publish_batch(batch);

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The doomed consumer: its own connections, claims a batch, dies hard.
    try {
      mq::queue mine(database::open(uri_), {.name = "q", .visibility_timeout = 3s});
      auto got = mine.poll(5);
      if (got.size() != 5) _exit(3);
    } catch (...) {
      _exit(4);
    }
    raise(SIGKILL);
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  EXPECT_TRUE(q->poll(5).empty());  // still inside the dead consumer's window
  std::this_thread::sleep_for(3500ms);
  std::set<std::string> redelivered;
  for (int round = 0; round < 10 && redelivered.size() < 5; ++round) {
    for (const auto& d : q->poll(5)) {
      EXPECT_EQ(d.receive_count, 2);
      redelivered.insert(d.broker_message_id);
      q->ack(d.receipt);
    }
  }
  EXPECT_EQ(redelivered.size(), 5u);
  EXPECT_EQ(count("queue_messages"), 0);
}

SPOOL_BOTH_ENGINES(mq_concurrency);

}  // namespace spool::test
