// The SQS benchmark's C++ side (bench/sqs/run.sh): the same cycle as the
// JavaScript SDK clients of bench/sqs/cycle.mjs, through the library.
// Each of N workers on its own thread repeats: publish_batch of 10 →
// poll(10) → ack_batch of what it got, for --seconds; then one JSON line with
// msgs/s (acknowledged messages) and p50/p99 per call.
//   spool_sqs_cycle_bench --db URI --queue NAME --workers N --seconds S --payload-bytes B
#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "spool/database.hpp"
#include "spool/mq/queue.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

// CPU seconds (user + system) this process has used so far.
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

struct call_times {
  std::vector<double> send, receive, remove;  // ms
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Spool SQS-cycle benchmark, C++ API side");
  std::string uri, queue_name = "sqs_bench";
  int workers = 1;
  double seconds = 5;
  std::size_t payload_bytes = 200;
  app.add_option("--db", uri)->required();
  app.add_option("--queue", queue_name);
  app.add_option("--workers", workers)->check(CLI::Range(1, 64));
  app.add_option("--seconds", seconds);
  app.add_option("--payload-bytes", payload_bytes);
  CLI11_PARSE(app, argc, argv);

  spool::database_options dbo;
  dbo.pool_size = static_cast<std::size_t>(workers) + 1;
  auto db = spool::database::open(uri, dbo);
  spool::mq::queue_options qo;
  qo.name = queue_name;
  qo.visibility_timeout = std::chrono::seconds(30);
  qo.notify = true;  // as spool serve's queues: each send wakes long polls, so the database does the same work
  spool::mq::queue q(db, qo);

  std::atomic<long> acked{0};
  std::mutex mu;
  call_times all;
  const auto ms = [](clock_type::time_point a) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - a).count();
  };
  const double cpu_before = cpu_seconds();
  const auto start = clock_type::now();
  const auto end = start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      call_times mine;
      std::vector<spool::mq::message> batch(10);
      for (auto& m : batch) {
        m.mediation_type = "SQS";
        m.mediation_target = queue_name;
        m.body = std::string(payload_bytes, 'x');
      }
      while (clock_type::now() < end) {
        auto t = clock_type::now();
        for (auto& m : batch) m.id.clear();
        (void)q.publish_batch(batch);
        mine.send.push_back(ms(t));
        t = clock_type::now();
        const auto got = q.poll(10);
        mine.receive.push_back(ms(t));
        std::vector<std::string> receipts;
        for (const auto& d : got) receipts.push_back(d.receipt);
        if (!receipts.empty()) {
          t = clock_type::now();
          const auto st = q.ack_batch(receipts);
          mine.remove.push_back(ms(t));
          acked += static_cast<long>(std::count(st.begin(), st.end(), spool::mq::ack_status::acked));
        }
      }
      std::lock_guard lock(mu);
      const auto append = [](std::vector<double>& to, const std::vector<double>& from) {
        to.insert(to.end(), from.begin(), from.end());
      };
      append(all.send, mine.send);
      append(all.receive, mine.receive);
      append(all.remove, mine.remove);
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
  fmt::print(
      "{{\"client\":\"cpp\",\"workers\":{},\"seconds\":{:.2f},\"payload_bytes\":{},\"messages\":{},"
      "\"msgs_per_s\":{:.0f},\"send_p50_ms\":{:.2f},\"send_p99_ms\":{:.2f},\"receive_p50_ms\":{:.2f},"
      "\"receive_p99_ms\":{:.2f},\"delete_p50_ms\":{:.2f},\"delete_p99_ms\":{:.2f},\"client_cpu_s\":{:.3f}}}\n",
      workers, elapsed, payload_bytes, acked.load(), static_cast<double>(acked.load()) / elapsed,
      percentile(all.send, 0.5), percentile(all.send, 0.99), percentile(all.receive, 0.5),
      percentile(all.receive, 0.99), percentile(all.remove, 0.5), percentile(all.remove, 0.99),
      cpu_seconds() - cpu_before);
  return 0;
}
