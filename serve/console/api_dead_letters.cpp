// The console's redrive of a dead-letter queue: messages the SQS API set
// aside after maxReceiveCount receives go back to the queue each came from
// (the source its payload records, else the dead-letter queue's only source)
// through mq::catalog::move, one transaction per message, as a move task
// (StartMessageMoveTask) does. A claimed message is left to its consumer.
#include <fmt/format.h>

#include <algorithm>

#include "serve/console/api.hpp"
#include "spool/mq/browser.hpp"
#include "spool/mq/catalog.hpp"

namespace spool::serve::console {

namespace {

// At most this many messages a call: an operator's "all" of a large queue is
// several calls, each short, so no request holds the server for minutes.
constexpr std::size_t max_per_call = 1000;

// The queue a dead-lettered message came from, as catalog::move records it.
std::optional<std::string> recorded_source(const std::string& payload) {
  const auto v = nlohmann::json::parse(payload, nullptr, false);
  if (!v.is_object()) return std::nullopt;
  const auto it = v.find("sqsSourceQueue");
  if (it == v.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool bool_member(const nlohmann::json& body, const std::string& name) {
  const auto it = body.find(name);
  if (it == body.end()) return false;
  if (!it->is_boolean())
    throw api_error{400, "invalid_member", fmt::format("\"{}\" must be true or false", name)};
  return it->get<bool>();
}

// The visible (and delayed) messages of queue matching the body's filter, in
// id order, at most max_per_call; `more` when some may follow.
std::vector<std::string> matching(api_context& ctx, const std::string& queue, const nlohmann::json& body,
                                  bool& more) {
  mq::message_filter f;
  f.queue = queue;
  if (const auto g = text_member(body, "group", false, 128); !g.empty()) f.group = g;
  f.id_prefix = text_member(body, "id_prefix", false, 200);
  if (const auto it = body.find("min_age"); it != body.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0)
      throw api_error{400, "invalid_member", "\"min_age\" must be a whole number of seconds"};
    f.min_age = std::chrono::seconds(it->get<std::int64_t>());
  }
  f.limit = 500;
  std::vector<std::string> ids;
  for (;;) {
    const auto page = ctx.mq->messages(f);
    for (const auto& m : page.messages) {
      if (m.state == mq::row_state::in_flight) continue;
      if (ids.size() == max_per_call) {
        more = true;
        return ids;
      }
      ids.push_back(m.id);
    }
    if (!page.next) return ids;
    f.after = *page.next;
  }
}

}  // namespace

std::vector<std::string> dead_letter_sources(api_context& ctx, std::string_view queue) {
  std::vector<std::string> out;
  for (const auto& [source, target] : dead_letter_queues(ctx)) {
    if (target == queue) out.push_back(source);
  }
  return out;
}

nlohmann::json redrive_dead_letters(api_context& ctx, const nlohmann::json& body) {
  const auto queue = text_member(body, "queue", true);
  const auto sources = dead_letter_sources(ctx, queue);
  if (sources.empty()) {
    throw api_error{409, "not_a_dead_letter_queue",
                    fmt::format("no queue's RedrivePolicy names {} as its dead-letter queue", queue)};
  }
  auto ids = ids_member(body, "ids", max_per_call);
  const bool all = bool_member(body, "all");
  if (ids.empty() == !all) {
    throw api_error{400, "missing_member", "give either the ids to redrive or \"all\": true with a filter"};
  }
  bool more = false;
  if (all) ids = matching(ctx, queue, body, more);

  mq::catalog catalog(ctx.db, ctx.schema);
  auto redriven = nlohmann::json::array(), in_flight = nlohmann::json::array(),
       missing = nlohmann::json::array(), unroutable = nlohmann::json::array();
  for (const auto& id : ids) {
    const auto m = ctx.mq->message(queue, id);
    if (!m) {
      missing.push_back(id);
      continue;
    }
    if (m->state == mq::row_state::in_flight) {
      in_flight.push_back(id);
      continue;
    }
    auto to = recorded_source(m->payload);
    if (to && !catalog.find(*to)) to.reset();  // its source queue is gone
    if (!to && sources.size() == 1) to = sources.front();
    if (!to) {
      unroutable.push_back(id);
      continue;
    }
    // An empty receipt moves the message in any state: a claim taken since
    // the read above loses it, and that consumer's ack finds nothing (the
    // message is then delivered again from its source: never lost).
    if (catalog.move(queue, id, "", *to, mq::move_kind::redrive)) {
      redriven.push_back({{"id", id}, {"to", *to}});
    } else {
      missing.push_back(id);
    }
  }
  return {{"redriven", std::move(redriven)},
          {"in_flight", std::move(in_flight)},
          {"missing", std::move(missing)},
          {"unroutable", std::move(unroutable)},
          {"more", more}};
}

}  // namespace spool::serve::console
