// spool_outbox_claimer: a relay reduced to its claims, for the outbox tests
// that need separate processes (tests/cli/outbox_multiprocess_test.cpp): its
// own connections, its own crash, its own clock (under faketime).
//
//   spool_outbox_claimer --db URI --owner NAME --out FILE [--count N] [--batch B]
//                        [--lease-ms MS] [--serialization none|by_ordering_key|by_topic]
//                        [--ready FILE --go FILE] [--hold | --retry-after SECONDS]
//
// Writes one JSON line per claimed row to FILE, flushed at once so a test can
// wait on the file instead of on time:
//   {"id":…,"token":…,"claim_count":…,"owner":…,"host_now_us":…}
// host_now_us is this process's system_clock, which lets a test prove that a
// faked clock took effect.
//
// Default: claim until N rows (default 1) are claimed, B (default N) per call,
// then exit 0. --hold: claim N rows, then block until killed. --retry-after S:
// claim one row and retry it with retry_at::after(S), then exit 0.
// --ready/--go: a start barrier for claimers meant to run at the same time:
// once connected, create the ready file, then claim only once go exists.
// Exit 1 with a line on stderr on any error or after 60 s without N rows.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spool/database.hpp"
#include "spool/error.hpp"
#include "spool/outbox/store.hpp"

namespace {

using namespace std::chrono_literals;
namespace outbox = spool::outbox;

std::int64_t host_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

outbox::serialization parse_serialization(const std::string& s) {
  if (s == "none") return outbox::serialization::none;
  if (s == "by_ordering_key") return outbox::serialization::by_ordering_key;
  if (s == "by_topic") return outbox::serialization::by_topic;
  throw std::invalid_argument("unknown --serialization " + s);
}

int run(std::map<std::string, std::string> opt) {
  const auto get = [&](const std::string& name, const std::string& fallback) {
    const auto it = opt.find(name);
    return it == opt.end() ? fallback : it->second;
  };
  const bool hold = opt.contains("hold"), retry = opt.contains("retry-after");
  const std::size_t count = retry ? 1 : std::stoul(get("count", "1"));
  const std::size_t batch = std::stoul(get("batch", std::to_string(count)));
  const std::chrono::milliseconds lease{std::stoll(get("lease-ms", "60000"))};
  const auto mode = parse_serialization(get("serialization", "none"));
  const std::string owner = get("owner", "claimer");

  auto db = spool::database::open(get("db", ""));
  outbox::store store(db);
  std::ofstream out(get("out", "/dev/stdout"), std::ios::app);

  const auto deadline = std::chrono::steady_clock::now() + 60s;
  if (opt.contains("go")) {
    store.ping();  // connected, so the barrier is not spent on start-up
    std::ofstream(get("ready", "/dev/null")).close();
    while (!std::filesystem::exists(opt["go"])) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("no " + opt["go"] + " in 60 s");
      std::this_thread::sleep_for(1ms);
    }
  }

  std::size_t claimed = 0;
  std::optional<outbox::lease_ref> first;
  while (claimed < count) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << "claimed " << claimed << " of " << count << " rows in 60 s\n";
      return 1;
    }
    std::vector<outbox::claimed_message> got;
    try {
      got = store.claim(owner, std::min(batch, count - claimed), lease, mode);
    } catch (const spool::error& e) {
      // A busy database (SQLite's single writer, shared with the other
      // claimers) is what a relay retries; anything else is a failure.
      if (!e.retryable()) throw;
      std::cerr << "retrying after: " << e.what() << "\n";
    }
    for (const auto& c : got) {
      if (!first) first = c.ref;
      out << nlohmann::json{{"id", c.ref.id},
                            {"token", c.ref.token},
                            {"claim_count", c.message.claim_count},
                            {"owner", c.owner},
                            {"host_now_us", host_now_us()}}
                 .dump()
          << std::endl;  // flushed: the test waits for this line
    }
    claimed += got.size();
    if (got.empty()) std::this_thread::sleep_for(20ms);
  }

  if (retry)
    store.retry(*first, outbox::retry_at::after(std::chrono::seconds(std::stoll(opt["retry-after"]))),
                {"test.retry", "retried by spool_outbox_claimer"});
  if (hold) {
    for (;;) pause();  // until SIGKILL: a relay that dies holding its leases
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      std::cerr << "unexpected argument " << a << "\n";
      return 2;
    }
    a.erase(0, 2);
    if (a == "hold") {
      opt[a] = "";
    } else if (i + 1 < argc) {
      opt[a] = argv[++i];
    } else {
      std::cerr << "--" << a << " needs a value\n";
      return 2;
    }
  }
  try {
    return run(std::move(opt));
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
