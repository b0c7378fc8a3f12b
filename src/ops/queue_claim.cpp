// The op queue's claim calls (op-queue.md §4): dequeue, dequeue_batch and has_ready.
#include <fmt/format.h>

#include "ops/queue_impl.hpp"
#include "ops/row_codec.hpp"
#include "ops/store.hpp"
#include "ops/validate.hpp"
#include "spool/ops/queue.hpp"

namespace spool::ops {

// ---- claim ----

namespace {
// Checks a claim's types and owner; the owner to record (empty: the driver's).
std::string claimant(const std::vector<std::string>& types, std::string_view owner,
                     const std::string& fallback) {
  for (const auto& t : types) detail::check_name("type", t);
  if (owner.empty()) return fallback;
  std::string who(owner);
  detail::check_name("owner", who);
  return who;
}
}  // namespace

std::optional<op> queue::dequeue(const std::vector<std::string>& types, std::string_view owner,
                                 const call_options& call) {
  const std::string who = claimant(types, owner, impl_->owner);
  const std::string token = detail::random_hex(16);
  const auto lim = impl_->limits(call);
  auto r = impl_->run([&] { return impl_->st->claim(types, who, token, lim); });
  if (!r) return std::nullopt;
  return detail::decode_row(*r, true);
}

std::vector<op> queue::dequeue_batch(std::size_t max, const std::vector<std::string>& types,
                                     std::string_view owner, const call_options& call) {
  if (max == 0 || max > 1000) {
    throw error(errc::invalid_argument, fmt::format("dequeue_batch takes 1..1000 ops, got {}", max),
                "value_outside_bounds");
  }
  const std::string who = claimant(types, owner, impl_->owner);
  std::vector<std::string> tokens;
  tokens.reserve(max);
  for (std::size_t i = 0; i < max; ++i) tokens.push_back(detail::random_hex(16));
  const auto lim = impl_->limits(call);
  const auto rows = impl_->run([&] {
    const auto turn = impl_->claims->enter(max, lim);
    return impl_->st->claim_many(types, who, tokens, lim);
  });
  std::vector<op> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(detail::decode_row(r, true));
  return out;
}

bool queue::has_ready(const std::vector<std::string>& types, const call_options& call) {
  for (const auto& t : types) detail::check_name("type", t);
  const auto lim = impl_->limits(call);
  return impl_->run([&] { return impl_->st->has_ready(types, lim); });
}

}  // namespace spool::ops
