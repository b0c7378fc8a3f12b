// The op queue's outcome calls (op-queue.md §4.5): ack, fail, release and
// heartbeat, one by one or in batches, each fenced by its lease token.
#include <fmt/format.h>

#include <set>

#include "common/text/utf8.hpp"
#include "ops/fencing.hpp"
#include "ops/queue_impl.hpp"
#include "ops/store.hpp"
#include "spool/ops/queue.hpp"

namespace spool::ops {

op_status queue::impl::outcome(detail::fence_request rq, const call_options& call) {
  const auto lim = limits(call);
  const auto r = run([&] { return st->outcome(rq, lim); });
  detail::check_fence(r, rq);
  return r.applied ? parse_status(r.new_status) : op_status::failed;
}

// ---- outcomes ----

namespace {
detail::fence_request request(detail::fence_request::kind what, std::string_view id, std::string_view token,
                              std::string_view message = {}, bool retry = false) {
  detail::fence_request rq;
  rq.what = what;
  rq.id = std::string(id);
  if (!token.empty()) rq.token = std::string(token);
  rq.message = spool::detail::utf8_repair(message, true);  // U+FFFD for ill-formed bytes, no NUL
  rq.retry = retry;
  return rq;
}
}  // namespace

void queue::ack(std::string_view id, std::string_view token, const call_options& call) {
  impl_->outcome(request(detail::fence_request::kind::ack, id, token), call);
}

std::vector<lease> queue::ack_batch(const std::vector<lease>& leases, const call_options& call) {
  if (leases.empty()) return {};
  if (leases.size() > 1000) {
    throw error(errc::invalid_argument,
                fmt::format("ack_batch takes at most 1000 leases, got {}", leases.size()),
                "value_outside_bounds");
  }
  std::set<std::string_view> seen;
  std::vector<detail::fence_request> acks;
  acks.reserve(leases.size());
  for (const auto& l : leases) {
    if (l.token.empty()) {
      throw error(errc::invalid_argument, fmt::format("ack_batch: the lease of op \"{}\" has no token", l.id),
                  "value_outside_bounds");
    }
    if (!seen.insert(l.id).second) {
      throw error(errc::invalid_argument, fmt::format("ack_batch: op \"{}\" appears twice", l.id),
                  "duplicate_ref");
    }
    acks.push_back(request(detail::fence_request::kind::ack, l.id, l.token));
  }
  const auto lim = impl_->limits(call);
  const auto results = impl_->run([&] { return impl_->st->ack_many(acks, lim); });
  std::vector<lease> not_acked;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    try {
      detail::check_fence(results.at(i), acks[i]);
    } catch (const error&) {
      not_acked.push_back(leases[i]);
    }
  }
  return not_acked;
}

op_status queue::fail(std::string_view id, std::string_view token, std::string_view message, bool retry,
                      const call_options& call) {
  auto rq = request(detail::fence_request::kind::fail, id, token, message, retry);
  if (retry)
    rq.retry_delay = std::chrono::duration_cast<std::chrono::microseconds>(impl_->opts.default_retry_delay);
  return impl_->outcome(std::move(rq), call);
}

op_status queue::fail(std::string_view id, std::string_view token, std::string_view message,
                      time_point next_run, const call_options& call) {
  auto rq = request(detail::fence_request::kind::fail, id, token, message, true);
  rq.retry_at = next_run;
  return impl_->outcome(std::move(rq), call);
}

op_status queue::fail(std::string_view id, std::string_view token, std::string_view message,
                      std::chrono::microseconds delay, const call_options& call) {
  auto rq = request(detail::fence_request::kind::fail, id, token, message, true);
  rq.retry_delay = delay.count() < 0 ? std::chrono::microseconds{0} : delay;
  return impl_->outcome(std::move(rq), call);
}

void queue::release(std::string_view id, std::string_view token, std::string_view message,
                    const call_options& call) {
  impl_->outcome(request(detail::fence_request::kind::release, id, token, message), call);
}

void queue::heartbeat(std::string_view id, std::string_view token, const call_options& call) {
  impl_->outcome(request(detail::fence_request::kind::heartbeat, id, token), call);
}

std::vector<lease> queue::heartbeat_batch(const std::vector<lease>& leases, const call_options& call) {
  if (leases.empty()) return {};
  const auto lim = impl_->limits(call);
  const auto refreshed = impl_->run([&] { return impl_->st->heartbeat_batch(leases, lim); });
  std::vector<lease> lost;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    if (!refreshed[i]) lost.push_back(leases[i]);
  }
  return lost;
}

}  // namespace spool::ops
