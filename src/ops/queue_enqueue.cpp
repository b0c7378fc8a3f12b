// The op queue's enqueue calls (op-queue.md §6): the dedup outcomes loop and the
// plain and transactional forms over it.
#include <fmt/format.h>

#include "engine/tx_state.hpp"
#include "ops/queue_impl.hpp"
#include "ops/store.hpp"
#include "ops/validate.hpp"
#include "spool/ops/queue.hpp"
#include "spool/tx.hpp"

namespace spool::ops {

namespace {

constexpr int max_dedup_rounds = 20;

}  // namespace

template <class Insert, class Holders>
std::vector<enqueue_result> queue::impl::enqueue(const std::vector<new_op>& ops,
                                                 const enqueue_options& options, bool single, Insert&& insert,
                                                 Holders&& holders) {
  auto items = detail::prepare_batch(ops, opts.max_payload_bytes, !single);
  std::vector<enqueue_result> out(items.size());
  if (items.empty()) return out;
  const on_duplicate mode = options.duplicates.value_or(opts.duplicates);
  std::vector<std::size_t> index(items.size());
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = i;
  for (int round = 0;; ++round) {
    const std::vector<detail::insert_outcome> outcome = insert(items);
    std::vector<std::size_t> collided;
    for (std::size_t k = 0; k < items.size(); ++k) {
      switch (outcome[k]) {
        case detail::insert_outcome::inserted:
          out[index[k]] = {items[k].id, true, enqueue_status::created};
          break;
        case detail::insert_outcome::id_taken:
          // One op: the caller's call is wrong. In a batch: a retried or
          // resumed batch, whose earlier attempt stored this item.
          if (single) {
            throw error(errc::already_exists,
                        fmt::format("an op with id \"{}\" already exists", items[k].id), "already_exists");
          }
          out[index[k]] = {items[k].id, false, enqueue_status::already_exists};
          break;
        case detail::insert_outcome::key_held:
          collided.push_back(k);
          break;
      }
    }
    if (collided.empty()) return out;
    std::vector<std::string> keys;
    for (auto k : collided) keys.push_back(items[k].dedup_key.value_or(""));
    if (mode == on_duplicate::raise) {
      if (!single) {
        for (auto k : collided) out[index[k]] = {"", false, enqueue_status::deduplicated};
        return out;
      }
      const auto h = holders(keys);
      const std::string holder = h.at(0).value_or("");
      throw duplicate_op(fmt::format("pending op \"{}\" already holds dedup key \"{}\"", holder, keys[0]),
                         holder);
    }
    // return_existing: a holder claimed since the conflict freed its key, so
    // those items are inserted again; the call never returns neither.
    const auto h = holders(keys);
    std::vector<detail::insert_item> again;
    std::vector<std::size_t> again_index;
    for (std::size_t c = 0; c < collided.size(); ++c) {
      const auto k = collided[c];
      if (h[c]) {
        out[index[k]] = {*h[c], false, enqueue_status::deduplicated};
      } else {
        again.push_back(std::move(items[k]));
        again_index.push_back(index[k]);
      }
    }
    if (again.empty()) return out;
    if (round >= max_dedup_rounds) {
      throw error(errc::unavailable, "a dedup key kept changing hands; try again", "dedup_contention");
    }
    items = std::move(again);
    index = std::move(again_index);
  }
}

void queue::impl::require_engine_of(const spool::tx& tx) const {
  if (tx.kind() != kind) {
    throw error(errc::invalid_argument,
                fmt::format("the op queue on {} and the transaction passed to it are on different engines", shown),
                "wrong_engine");
  }
}

// ---- enqueue ----

enqueue_result queue::enqueue(const new_op& o, const enqueue_options& options, const call_options& call) {
  const auto lim = impl_->limits(call);
  return impl_
      ->run([&] {
        return impl_->enqueue(
            {o}, options, true, [&](const auto& items) { return impl_->st->insert(items, lim); },
            [&](const auto& keys) { return impl_->st->holders(keys, lim); });
      })
      .at(0);
}

std::vector<enqueue_result> queue::enqueue_batch(const std::vector<new_op>& ops,
                                                 const enqueue_options& options, const call_options& call) {
  const auto lim = impl_->limits(call);
  return impl_->run([&] {
    return impl_->enqueue(
        ops, options, false, [&](const auto& items) { return impl_->st->insert(items, lim); },
        [&](const auto& keys) { return impl_->st->holders(keys, lim); });
  });
}

// The transactional forms: the caller's transaction, checked as the outbox
// writer checks it, never committed here.
std::vector<enqueue_result> queue::enqueue_batch(spool::tx& tx, const std::vector<new_op>& ops,
                                                 const enqueue_options& options) {
  impl_->require_engine_of(tx);
  const auto& cfg = impl_->config;
  return impl_->run([&] {
    tx.state().require_transaction();  // before validation, as before the one-tx API
    return impl_->enqueue(
        ops, options, false, [&](const auto& items) { return detail::insert_in(tx, cfg, items); },
        [&](const auto& keys) { return detail::holders_in(tx, cfg, keys); });
  });
}

enqueue_result queue::enqueue(spool::tx& tx, const new_op& o, const enqueue_options& options) {
  impl_->require_engine_of(tx);
  const auto& cfg = impl_->config;
  return impl_
      ->run([&] {
        tx.state().require_transaction();
        return impl_->enqueue(
            {o}, options, true, [&](const auto& items) { return detail::insert_in(tx, cfg, items); },
            [&](const auto& keys) { return detail::holders_in(tx, cfg, keys); });
      })
      .at(0);
}

}  // namespace spool::ops
