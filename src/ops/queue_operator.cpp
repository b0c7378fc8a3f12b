// The op queue's operator calls: cancel, retry, get, the listings, stats and
// the repairs (orphans, expired leases, SQLite timestamps).
#include <fmt/format.h>

#include "common/log.hpp"
#include "ops/cursor.hpp"
#include "ops/queue_impl.hpp"
#include "ops/row_codec.hpp"
#include "ops/store.hpp"
#include "spool/ops/queue.hpp"

namespace spool::ops {

// ---- operator calls ----

op queue::cancel(std::string_view id, const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto r = impl_->run([&] { return impl_->st->cancel(std::string(id), lim); });
  if (!r.found) throw error(errc::not_found, fmt::format("cancel: no op with id \"{}\"", id));
  if (!r.after) {
    throw error(errc::invalid_state,
                fmt::format("cancel: op \"{}\" is {}; only pending ops can be cancelled", id, r.before));
  }
  return detail::decode_row(*r.after, false);
}

op queue::retry(std::string_view id, bool reset_attempts, const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto r = impl_->run([&] { return impl_->st->retry(std::string(id), reset_attempts, lim); });
  if (!r.found) throw error(errc::not_found, fmt::format("retry: no op with id \"{}\"", id));
  if (!r.after) {
    throw error(errc::invalid_state,
                fmt::format("retry: op \"{}\" is {}; only failed ops can be retried", id, r.before));
  }
  return detail::decode_row(*r.after, false);
}

op queue::get(std::string_view id, const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto r = impl_->run([&] { return impl_->st->get(std::string(id), lim); });
  if (!r) throw error(errc::not_found, fmt::format("no op with id \"{}\"", id));
  return detail::decode_row(*r, false);
}

namespace {
std::int64_t checked_limit(std::int64_t limit) {
  if (limit < 0 || limit > 500) {
    throw error(errc::invalid_argument, fmt::format("limit must be 0 … 500 (0 means 100), got {}", limit));
  }
  return limit == 0 ? 100 : limit;
}
}  // namespace

list_page queue::list(std::string_view status, std::int64_t limit, std::int64_t offset,
                      const call_options& call) {
  const auto n = checked_limit(limit);
  if (offset < 0)
    throw error(errc::invalid_argument, fmt::format("offset must not be negative, got {}", offset));
  const auto lim = impl_->limits(call);
  auto [rows, total] = impl_->run([&] { return impl_->st->list(std::string(status), n, offset, lim); });
  list_page out;
  out.total = total;
  for (const auto& r : rows) out.ops.push_back(detail::decode_row(r, false));
  return out;
}

keyset_page queue::list_after(std::string_view status, std::int64_t limit, std::string_view cursor,
                              const call_options& call) {
  return list_after(list_filter{std::string(status), {}}, limit, cursor, call);
}

keyset_page queue::list_after(const list_filter& filter, std::int64_t limit, std::string_view cursor,
                              const call_options& call) {
  const auto n = checked_limit(limit);
  if (filter.type.size() > 255)
    throw error(errc::invalid_argument, "the type filter is over 255 bytes", "value_outside_bounds");
  const auto after = detail::decode_cursor(cursor);
  const auto lim = impl_->limits(call);
  const auto rows = impl_->run([&] { return impl_->st->list_after(filter, n, after, lim); });
  keyset_page out;
  for (const auto& r : rows) out.ops.push_back(detail::decode_row(r, false));
  if (static_cast<std::int64_t>(rows.size()) == n) {
    out.next_cursor = detail::encode_cursor({rows.back().at(8).value_or(""), rows.back().at(0).value_or("")});
  }
  return out;
}

queue_stats queue::stats(const call_options& call) {
  const auto lim = impl_->limits(call);
  return impl_->run([&] { return impl_->st->stats(lim); });
}

namespace {

std::int64_t count_of(const std::optional<std::string>& v) { return v ? std::stoll(*v) : 0; }

}  // namespace

std::vector<type_stats> queue::stats_by_type(const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto rows = impl_->run([&] { return impl_->st->stats_by_type(lim); });
  std::vector<type_stats> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    type_stats t;
    t.type = r.at(0).value_or("");
    t.counts = {count_of(r.at(1)), count_of(r.at(2)), count_of(r.at(3)), count_of(r.at(4)),
                count_of(r.at(5))};
    if (r.at(6)) t.oldest_pending_enqueued_at = count_of(r.at(6));
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<throughput_minute> queue::throughput(std::chrono::minutes window, const call_options& call) {
  if (window < std::chrono::minutes(1) || window > std::chrono::hours(24)) {
    throw error(errc::invalid_argument,
                fmt::format("the window must be 1 to 1,440 minutes, got {}", window.count()),
                "invalid_window");
  }
  const auto lim = impl_->limits(call);
  const auto rows = impl_->run([&] {
    return impl_->st->throughput(std::chrono::duration_cast<std::chrono::seconds>(window).count(), lim);
  });
  std::vector<throughput_minute> out;
  out.reserve(rows.size());
  for (const auto& r : rows) {
    out.push_back({r.at(0).value_or(""), count_of(r.at(1)), count_of(r.at(2)), count_of(r.at(3))});
  }
  return out;
}

std::int64_t queue::recover_orphans(std::chrono::seconds older_than, const call_options& call) {
  if (older_than.count() < 0) {
    throw error(errc::invalid_argument,
                fmt::format("older_than must not be negative, got {}s", older_than.count()));
  }
  const auto lim = impl_->limits(call);
  const auto n = impl_->run([&] { return impl_->st->recover_orphans(older_than, lim); });
  if (n > 0)
    spool::detail::log().info("recover_orphans requeued {} running op(s) of {}", n, impl_->config.table);
  return n;
}

std::vector<rescued_op> queue::rescue_expired(std::chrono::milliseconds lease_timeout,
                                              const call_options& call) {
  if (lease_timeout.count() <= 0) {
    throw error(errc::invalid_argument,
                fmt::format("lease_timeout must be positive, got {}ms", lease_timeout.count()));
  }
  const auto lim = impl_->limits(call);
  return impl_->run([&] { return impl_->st->rescue(lease_timeout, lim); });
}

std::vector<rescued_op> queue::recover_legacy_orphans(std::chrono::milliseconds older_than,
                                                      const call_options& call) {
  if (older_than.count() < 0) {
    throw error(errc::invalid_argument,
                fmt::format("older_than must not be negative, got {}ms", older_than.count()));
  }
  const auto lim = impl_->limits(call);
  return impl_->run([&] { return impl_->st->recover_legacy(older_than, lim); });
}

std::int64_t queue::repair_times(const call_options& call) {
  const auto lim = impl_->limits(call);
  const auto n = impl_->run([&] { return impl_->st->repair_times(lim); });
  if (n > 0) spool::detail::log().warn("repair_times rewrote {} timestamp(s) of {}", n, impl_->config.table);
  return n;
}

}  // namespace spool::ops
