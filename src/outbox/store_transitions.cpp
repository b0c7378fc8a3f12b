// The outbox store's fenced transitions (outbox.md §6.2): delivered (one, a batch, or
// with the next claim), retry, dead letter and release.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "outbox/store.hpp"
#include "outbox/store_calls.hpp"
#include "outbox/text.hpp"
#include "spool/outbox/store.hpp"

namespace spool::outbox {

namespace {

using detail::check_ref;
using detail::invalid;
using detail::observed;
using std::chrono::microseconds;

void check_failure(const failure& f) {
  const bool ok = !f.code.empty() && f.code.size() <= 64 &&
                  f.code.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.") == std::string::npos;
  if (!ok) invalid("value_outside_bounds", "failure code must be 1..64 bytes of [a-z0-9_.]");
}

struct fenced_call {
  operation op;
  detail::transition t;
};

}  // namespace

#define SPOOL_OUTBOX_FENCED(OP, T, FN)                                                                  \
  observed(                                                                                             \
      this, OP, &store::emit,                                                                           \
      [&] {                                                                                             \
        std::optional<detail::transition_row> r;                                                        \
        try {                                                                                           \
          r = backend_->fenced(ref, T, FN, c);                                                          \
        } catch (...) {                                                                                 \
          detail::rethrow_translated();                                                                 \
        }                                                                                               \
        if (!r) {                                                                                       \
          throw error(errc::lease_lost, fmt::format("the lease on {} expired or was replaced", ref.id), \
                      "lease_lost");                                                                    \
        }                                                                                               \
        return *r;                                                                                      \
      },                                                                                                \
      [](event& e, const detail::transition_row& row) {                                                 \
        e.count = 1;                                                                                    \
        e.topic = row.topic;                                                                            \
        e.claim_count = row.claim_count;                                                                \
        e.failure_count = row.failure_count;                                                            \
      },                                                                                                \
      ref.id)

void store::mark_delivered(const lease_ref& ref, const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::deliver, {}, {}, {}, {}};
  (void)SPOOL_OUTBOX_FENCED(operation::deliver, t, nullptr);
}

void store::mark_delivered(const lease_ref& ref, const std::function<void(spool::tx&)>& fn,
                           const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::deliver, {}, {}, {}, {}};
  (void)SPOOL_OUTBOX_FENCED(operation::deliver, t, &fn);
}

std::vector<bool> store::mark_delivered_batch(const std::vector<lease_ref>& refs, const call_options& c) {
  return deliver_batch(refs, nullptr, c);
}

std::vector<bool> store::mark_delivered_batch(const std::vector<lease_ref>& refs,
                                              const std::function<void(spool::tx&, const std::vector<bool>&)>& fn,
                                              const call_options& c) {
  return deliver_batch(refs, &fn, c);
}

std::vector<bool> store::deliver_batch(const std::vector<lease_ref>& refs,
                                       const std::function<void(spool::tx&, const std::vector<bool>&)>* fn,
                                       const call_options& c) {
  if (refs.empty() || refs.size() > 1000) {
    invalid("value_outside_bounds",
            fmt::format("mark_delivered_batch takes 1..1000 refs, got {}", refs.size()));
  }
  std::unordered_set<std::string_view> seen;
  for (const auto& r : refs) {
    check_ref(r);
    if (!seen.insert(r.id).second)
      invalid("duplicate_ref", fmt::format("message {} appears twice in the batch", r.id));
  }
  using rows_t = std::vector<std::optional<detail::transition_row>>;
  const rows_t rows = observed(
      this, operation::deliver, &store::emit,
      [&] {
        try {
          return backend_->deliver_many(refs, fn, c);
        } catch (...) {
          detail::rethrow_translated();
        }
      },
      [](event& e, const rows_t& got) {
        e.count = static_cast<std::size_t>(
            std::count_if(got.begin(), got.end(), [](const auto& r) { return r.has_value(); }));
      },
      refs.size() == 1 ? refs[0].id : std::string());
  std::vector<bool> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(r.has_value());
  return out;
}

std::optional<claimed_message> store::mark_delivered_and_claim_next(const lease_ref& ref,
                                                                    microseconds lease_duration,
                                                                    serialization mode,
                                                                    const call_options& c) {
  check_ref(ref);
  if (lease_duration <= microseconds(0) || lease_duration > options_.max_lease_duration) {
    invalid("invalid_lease_duration",
            fmt::format("lease duration {} µs is outside (0, {} µs]", lease_duration.count(),
                        options_.max_lease_duration.count()));
  }
  if (mode != serialization::none && mode != serialization::by_ordering_key &&
      mode != serialization::by_topic) {
    invalid("invalid_serialization", "serialization must be none, by_ordering_key or by_topic");
  }
  using outcome = detail::store_backend::deliver_next_outcome;
  const auto start = std::chrono::steady_clock::now();
  const outcome o = observed(
      this, operation::deliver, &store::emit,
      [&] {
        std::optional<outcome> r;
        try {
          r = backend_->deliver_and_claim_next(ref, lease_duration.count(), mode, c);
        } catch (...) {
          detail::rethrow_translated();
        }
        if (!r) {
          throw error(errc::lease_lost, fmt::format("the lease on {} expired or was replaced", ref.id),
                      "lease_lost");
        }
        return std::move(*r);
      },
      [](event& e, const outcome& r) {
        e.count = 1;
        e.topic = r.delivered.topic;
        e.claim_count = r.delivered.claim_count;
        e.failure_count = r.delivered.failure_count;
      },
      ref.id);
  if (o.next) {
    event e;
    e.op = operation::claim;
    e.count = 1;
    e.message_id = o.next->message.id;
    e.topic = o.next->message.topic;
    e.claim_count = o.next->message.claim_count;
    e.failure_count = o.next->message.failure_count;
    e.duration = std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - start);
    emit(std::move(e));
  }
  return o.next;
}

void store::retry(const lease_ref& ref, const retry_at& at, const failure& f, const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::retry, {}, {}, {}, {}};
  if (at.delay()) {
    if (*at.delay() < microseconds(0) || *at.delay() > options_.max_retry_delay) {
      invalid("invalid_retry_delay",
              fmt::format("retry delay {} µs is outside 0..max_retry_delay", at.delay()->count()));
    }
    t.delay_us = at.delay()->count();
  } else if (at.instant()) {
    if (*at.instant() < min_time() || *at.instant() > max_time()) {
      invalid("timestamp_out_of_range", "retry time is outside 0001..9999");
    }
    if (detail::micros(*at.instant()) - detail::host_now_us() > options_.max_retry_delay.count()) {
      invalid("invalid_retry_delay", "retry time is more than max_retry_delay ahead");
    }
    t.at_us = detail::micros(*at.instant());
  } else {
    invalid("invalid_retry_delay", "retry_at is empty");
  }
  check_failure(f);
  t.code = f.code;
  t.message = detail::sanitize_error_text(f.message, options_.max_error_bytes);
  (void)SPOOL_OUTBOX_FENCED(operation::retry, t, nullptr);
}

void store::dead_letter(const lease_ref& ref, const failure& f, const call_options& c) {
  check_ref(ref);
  check_failure(f);
  detail::transition t{detail::transition::kind::dead,
                       {},
                       {},
                       f.code,
                       detail::sanitize_error_text(f.message, options_.max_error_bytes)};
  (void)SPOOL_OUTBOX_FENCED(operation::dead, t, nullptr);
}

void store::release_lease(const lease_ref& ref, const call_options& c) {
  check_ref(ref);
  detail::transition t{detail::transition::kind::release, {}, {}, {}, {}};
  (void)SPOOL_OUTBOX_FENCED(operation::release, t, nullptr);
}

#undef SPOOL_OUTBOX_FENCED

}  // namespace spool::outbox
