// The outbox store's lease calls (outbox.md §6.1, §6.2): claim, extend and check a lease.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "outbox/store.hpp"
#include "outbox/store_calls.hpp"
#include "spool/outbox/store.hpp"

namespace spool::outbox {

namespace {

using detail::check_ref;
using detail::invalid;
using detail::observed;
using std::chrono::microseconds;

}  // namespace

std::vector<claimed_message> store::claim(const std::string& owner, std::size_t limit,
                                          microseconds lease_duration, serialization mode,
                                          const call_options& c) {
  if (owner.empty()) invalid("claim_owner_required", "claim needs an owner");
  if (owner.size() > 255)
    invalid("value_outside_bounds", fmt::format("owner is {} bytes; the limit is 255", owner.size()));
  if (limit < 1 || limit > options_.max_claim_batch) {
    invalid("invalid_claim_limit",
            fmt::format("limit = {} is outside 1..{}", limit, options_.max_claim_batch));
  }
  if (lease_duration <= microseconds(0) || lease_duration > options_.max_lease_duration) {
    invalid("invalid_lease_duration",
            fmt::format("lease duration {} µs is outside (0, {} µs]", lease_duration.count(),
                        options_.max_lease_duration.count()));
  }
  if (mode != serialization::none && mode != serialization::by_ordering_key &&
      mode != serialization::by_topic) {
    invalid("invalid_serialization", "serialization must be none, by_ordering_key or by_topic");
  }
  return observed(
      this, operation::claim, &store::emit,
      [&] {
        try {
          return backend_->claim(owner, limit, lease_duration.count(), mode, c);
        } catch (...) {
          detail::rethrow_translated();
        }
      },
      [](event& e, const std::vector<claimed_message>& got) {
        e.count = got.size();
        if (got.size() == 1) {
          e.message_id = got[0].message.id;
          e.topic = got[0].message.topic;
          e.claim_count = got[0].message.claim_count;
          e.failure_count = got[0].message.failure_count;
        }
      });
}

std::vector<std::optional<time_point>> store::extend_leases(const std::vector<lease_ref>& refs,
                                                            microseconds duration, const call_options& c) {
  if (duration <= microseconds(0) || duration > options_.max_lease_duration) {
    invalid("invalid_lease_duration", fmt::format("lease duration {} µs is outside (0, {} µs]",
                                                  duration.count(), options_.max_lease_duration.count()));
  }
  if (refs.empty() || refs.size() > 1000) {
    invalid("value_outside_bounds", fmt::format("extend_leases takes 1..1000 refs, got {}", refs.size()));
  }
  for (const auto& r : refs) check_ref(r);
  return observed(
      this, operation::extend, &store::emit, [&] { return backend_->extend(refs, duration.count(), c); },
      [](event& e, const std::vector<std::optional<time_point>>& got) {
        e.count = static_cast<std::size_t>(
            std::count_if(got.begin(), got.end(), [](const auto& t) { return t.has_value(); }));
      },
      refs.size() == 1 ? refs[0].id : std::string());
}

time_point store::extend_lease(const lease_ref& ref, microseconds duration, const call_options& c) {
  const auto got = extend_leases({ref}, duration, c);
  if (!got.at(0)) {
    throw error(errc::lease_lost, fmt::format("the lease on {} expired or was replaced", ref.id),
                "lease_lost");
  }
  return *got[0];
}

std::string_view to_string(lease_fate f) noexcept {
  switch (f) {
    case lease_fate::held:
      return "held";
    case lease_fate::pending:
      return "pending";
    case lease_fate::delivered:
      return "delivered";
    case lease_fate::dead:
      return "dead";
    case lease_fate::replaced:
      return "replaced";
    case lease_fate::missing:
      return "missing";
  }
  return "missing";
}

lease_fate store::check_lease(const lease_ref& ref, const call_options& c) {
  check_ref(ref);
  std::optional<std::pair<message_state, bool>> s;
  try {
    s = backend_->lease_state(ref, c);
  } catch (...) {
    detail::rethrow_translated();
  }
  if (!s) return lease_fate::missing;
  switch (s->first) {
    case message_state::leased:
      return s->second ? lease_fate::held : lease_fate::replaced;
    case message_state::pending:
      return lease_fate::pending;
    case message_state::delivered:
      return lease_fate::delivered;
    case message_state::dead:
      return lease_fate::dead;
  }
  return lease_fate::missing;
}

}  // namespace spool::outbox
