// The relay's options, checked and defaulted once, when it is built (outbox.md §7).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "common/log.hpp"
#include "common/uuid.hpp"
#include "outbox/relay/impl.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

namespace {

std::string default_owner() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  return fmt::format("{}:{}:{}", host, ::getpid(), spool::detail::uuid_v4().substr(0, 8));
}

}  // namespace

void detail::invalid_relay_config(const std::string& message) {
  throw error(errc::invalid_argument, "relay: " + message, "invalid_config");
}

relay::impl::impl(store& s, std::shared_ptr<sink> k, relay_options opts)
    : st(s), sk(std::move(k)), o(std::move(opts)) {
  if (!sk) throw error(errc::invalid_argument, "relay: a sink is required", "sink_required");
  const auto& so = st.options();
  if (o.owner) {
    if (o.owner->empty()) throw error(errc::invalid_argument, "relay: owner is empty", "owner_required");
    if (o.owner->size() > 255)
      detail::invalid_relay_config(fmt::format("owner is {} bytes, over 255", o.owner->size()));
    owner = *o.owner;
  } else {
    owner = default_owner();
  }
  if (o.max_in_flight < 1 || o.max_in_flight > 10000) {
    detail::invalid_relay_config(fmt::format("max_in_flight = {} is outside 1..10,000", o.max_in_flight));
  }
  threads = o.sink_concurrency == 0 ? o.max_in_flight : o.sink_concurrency;
  if (threads > 256 || threads > o.max_in_flight) {
    detail::invalid_relay_config(
        fmt::format("sink_concurrency = {} is outside 1..{} (at most 256 and max_in_flight {})", threads,
                    std::min<std::size_t>(256, o.max_in_flight), o.max_in_flight));
  }
  claim_batch = o.claim_batch == 0 ? std::min(o.max_in_flight, so.max_claim_batch) : o.claim_batch;
  if (claim_batch > so.max_claim_batch) {
    detail::invalid_relay_config(fmt::format(
        "claim_batch = {} is outside 1..{} (the store's max_claim_batch)", claim_batch, so.max_claim_batch));
  }
  // As many claim rounds as whole claims fit beside each other in the
  // leases, never more than the sink calls or four (each holds a
  // connection; four kept the benchmark's server busy, more were not
  // measured).
  claimers = std::max<std::size_t>(1, std::min({o.max_in_flight / claim_batch, threads, std::size_t{4}}));
  if (o.lease_duration <= 0ms || o.lease_duration > so.max_lease_duration) {
    detail::invalid_relay_config(
        fmt::format("lease_duration = {} ms is outside (0, {} ms] (the store's max_lease_duration)",
                    o.lease_duration.count(),
                    std::chrono::duration_cast<std::chrono::milliseconds>(so.max_lease_duration).count()));
  }
  renew = o.renew_interval == 0ms ? o.lease_duration / 3 : o.renew_interval;
  if (renew <= 0ms || renew > o.lease_duration / 2) {
    detail::invalid_relay_config(
        fmt::format("renew_interval = {} ms is outside (0, lease_duration / 2 = {} ms]", renew.count(),
                    (o.lease_duration / 2).count()));
  }
  if (o.mode != serialization::none && o.mode != serialization::by_ordering_key &&
      o.mode != serialization::by_topic) {
    detail::invalid_relay_config(
        fmt::format("serialization = {} is not none, by_ordering_key or by_topic", static_cast<int>(o.mode)));
  }
  if (o.poll_interval == 0ms) o.poll_interval = o.notify ? 30s : 1s;
  if (o.poll_interval < 10ms || o.poll_interval > 10min) {
    detail::invalid_relay_config(
        fmt::format("poll_interval = {} ms is outside 10 ms..10 min", o.poll_interval.count()));
  }
  if (o.max_attempts < 1 || o.max_attempts > 10000) {
    detail::invalid_relay_config(fmt::format("max_attempts = {} is outside 1..10000", o.max_attempts));
  }
  if (o.max_claims < o.max_attempts || o.max_claims > 1000000) {
    detail::invalid_relay_config(
        fmt::format("max_claims = {} is outside max_attempts ({})..1000000", o.max_claims, o.max_attempts));
  }
  if (o.backoff.initial <= 0ms || o.backoff.cap < o.backoff.initial || o.backoff.cap > so.max_retry_delay) {
    detail::invalid_relay_config(
        fmt::format("backoff initial = {} ms, cap = {} ms: need 0 < initial <= cap <= {} ms (the store's "
                    "max_retry_delay)",
                    o.backoff.initial.count(), o.backoff.cap.count(),
                    std::chrono::duration_cast<std::chrono::milliseconds>(so.max_retry_delay).count()));
  }
  if (o.breaker.failures < 1 || o.breaker.open_period <= 0ms ||
      o.breaker.max_open_period < o.breaker.open_period) {
    detail::invalid_relay_config(
        fmt::format("breaker failures = {}, open_period = {} ms, max_open_period = {} ms: need "
                    "failures >= 1 and 0 < open_period <= max_open_period",
                    o.breaker.failures, o.breaker.open_period.count(), o.breaker.max_open_period.count()));
  }
  if (o.transition_timeout < 1s || o.transition_timeout > 60s) {
    detail::invalid_relay_config(
        fmt::format("transition_timeout = {} ms is outside 1..60 s", o.transition_timeout.count()));
  }
  if (o.shutdown_grace < 0ms || o.shutdown_grace > 10min) {
    detail::invalid_relay_config(
        fmt::format("shutdown_grace = {} ms is outside 0..10 min", o.shutdown_grace.count()));
  }
  if (o.on_metrics && o.metrics_interval <= 0ms) {
    detail::invalid_relay_config(
        fmt::format("metrics_interval = {} ms must be positive", o.metrics_interval.count()));
  }
  breaker_period = o.breaker.open_period;
}

}  // namespace spool::outbox
