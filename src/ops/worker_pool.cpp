// The op-queue worker pool's public API (op-queue.md §5, §7). Its workers
// and services are in src/ops/worker_pool/, one part per file.
#include "spool/ops/worker_pool.hpp"

#include <fmt/format.h>

#include "common/log.hpp"
#include "ops/worker_pool/impl.hpp"
#include "spool/error.hpp"

namespace spool::ops {

using spool::detail::log;

type_metrics pool_metrics::total() const {
  type_metrics t;
  for (const auto& [type, m] : by_type) {
    t.claimed += m.claimed;
    t.succeeded += m.succeeded;
    t.failed += m.failed;
    t.retried += m.retried;
    t.released += m.released;
    t.recovered += m.recovered;
    t.lease_lost += m.lease_lost;
    t.db_errors += m.db_errors;
    t.handler_latency += m.handler_latency;
  }
  return t;
}

worker_pool::worker_pool(queue& q, worker_pool_options options)
    : impl_(std::make_unique<impl>(q, std::move(options))) {}

worker_pool::~worker_pool() {
  try {
    (void)stop();
  } catch (const std::exception& e) {
    log().error("ops worker_pool: stop in the destructor failed: {}", e.what());
  }
  impl_->workers.join();  // handlers still running after stop() are waited for here
}

// Registers r for type (add_handler, add_batch_handler): what is the call's
// name in its errors; empty says whether r holds no handler.
void worker_pool::impl::register_handler(const std::string& type, registration r, bool empty,
                                         const char* what, const handler_options& options) {
  if (type.empty()) throw error(errc::invalid_argument, "worker_pool handler type must not be empty");
  if (empty)
    throw error(errc::invalid_argument,
                fmt::format("worker_pool {}: the handler for type {} is empty", what, type));
  std::lock_guard lock(lifecycle);
  if (started || stopped)
    throw error(errc::invalid_state, fmt::format("worker_pool {}({}) after start", what, type));
  r.retry = options.retry.value_or(default_retry);
  check_policy(r.retry);
  handlers[type] = std::move(r);
  // Its zeroed counters exist from now on: a metrics endpoint served before
  // start() already shows every registered type.
  std::lock_guard m(metrics_mutex);
  counters[type];
}

void worker_pool::add_handler(const std::string& type, op_handler handler, handler_options options) {
  const bool empty = !handler;
  impl_->register_handler(type, registration{std::move(handler), {}, {}}, empty, "add_handler", options);
}

void worker_pool::add_batch_handler(const std::string& type, batch_op_handler handler,
                                    handler_options options) {
  const bool empty = !handler;
  impl_->register_handler(type, registration{{}, std::move(handler), {}}, empty, "add_batch_handler",
                          options);
}

void worker_pool::start() { impl_->start(); }

stop_report worker_pool::stop(std::optional<std::chrono::milliseconds> deadline) {
  return impl_->stop(deadline.value_or(impl_->opts.shutdown_deadline));
}

pool_metrics worker_pool::metrics() const { return impl_->snapshot(); }

const std::string& worker_pool::owner() const noexcept { return impl_->opts.owner; }

std::vector<std::string> worker_pool::types() const {
  std::lock_guard lock(impl_->lifecycle);
  std::vector<std::string> out;
  for (const auto& [type, r] : impl_->handlers) out.push_back(type);
  return out;
}

}  // namespace spool::ops
