// queue::impl, the op-queue driver's state shared by queue.cpp and the queue_*.cpp files:
// options, the store, and the closed state every call checks (op-queue.md §4–§6).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/claim_gate.hpp"
#include "common/stop_gate.hpp"
#include "ops/store.hpp"
#include "spool/ops/queue.hpp"

namespace spool::ops {

struct queue::impl {
  using sqlite_pool = spool::detail::pool<sqlite::detail::connection>;

  queue_options opts;
  engine kind = engine::sqlite;
  std::optional<database> db;  // absent for an adopted SQLite handle
  bool owns_db = false;        // opened by spool::ops::open
  std::unique_ptr<sqlite_pool> adopted_pool;
  std::unique_ptr<spool::detail::wake_signal> adopted_wake;
  std::string owner;
  detail::store_config config;
  std::unique_ptr<detail::store> st;
  std::string shown;  // the database as messages show it

  spool::detail::stop_gate gate;
  std::optional<spool::detail::claim_gate> claims;  // made by init(), from opts

  // The caller's limits, with call_timeout as the deadline when none is given.
  [[nodiscard]] call_options limits(const call_options& call) const {
    call_options out = call;
    if (!out.deadline) out.deadline = std::chrono::steady_clock::now() + opts.call_timeout;
    return out;
  }

  [[nodiscard]] bool is_closed() { return gate.closed(); }

  [[nodiscard]] error stopped_error() const;

  // Runs one database operation: refuses after close, and reports a failure
  // caused by a racing close as `stopped`.
  template <class F>
  auto run(F&& f) {
    return gate.run(std::forward<F>(f), [&] { return stopped_error(); });
  }

  // queue.cpp: validates the options, migrates when asked, builds the store
  // and checks its schema.
  void init();

  // queue_enqueue.cpp. Dedup outcomes (§6) around an inserter and a holder
  // lookup that run on the same connection or transaction.
  template <class Insert, class Holders>
  std::vector<enqueue_result> enqueue(const std::vector<new_op>& ops, const enqueue_options& options,
                                      bool single, Insert&& insert, Holders&& holders);

  // queue_outcomes.cpp: one fenced outcome call.
  op_status outcome(detail::fence_request rq, const call_options& call);

  // queue.cpp.
  void close();
  spool::detail::wake_signal& wake();

  // queue_enqueue.cpp: refuses a transaction of the other engine (invalid_argument, wrong_engine).
  void require_engine_of(const spool::tx& tx) const;
};

}  // namespace spool::ops
