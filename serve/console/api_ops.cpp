// The console's op-queue API over ops::queue: keyset pages by status and type, one op,
// and the operator's retry, cancel and enqueue.
#include "serve/console/api.hpp"
#include "spool/ops/queue.hpp"

namespace spool::serve::console {

namespace {

ops::queue& ops_of(api_context& ctx) {
  if (!ctx.ops) throw api_error{409, "ops_unavailable", ctx.ops_missing};
  return *ctx.ops;
}

nlohmann::json op_json(const ops::op& o) {
  auto j = ops::to_json(o);
  if (auto it = j.find("payload"); it != j.end()) {
    nlohmann::json shown;
    put_payload(shown, it->dump());
    j["payload_text"] = shown["payload"];
  }
  return j;
}

std::string required_id(const nlohmann::json& body) { return text_member(body, "id", true, 255); }

}  // namespace

nlohmann::json ops_read(api_context& ctx, std::string_view route, const http_request& r) {
  auto& q = ops_of(ctx);
  if (route == "list") {
    const auto status = text_param(r, "status", 32);
    if (!status.empty() && status != "pending" && status != "running" && status != "done" &&
        status != "failed" && status != "cancelled") {
      throw api_error{400, "invalid_status", "status must be pending, running, done, failed or cancelled"};
    }
    const ops::list_filter filter{status, text_param(r, "type", 255)};
    const auto page = q.list_after(filter, static_cast<std::int64_t>(limit_param(r)), text_param(r, "after"));
    nlohmann::json out{{"ops", nlohmann::json::array()}, {"next", nullptr}};
    for (const auto& o : page.ops) out["ops"].push_back(op_json(o));
    if (!page.next_cursor.empty()) out["next"] = page.next_cursor;
    return out;
  }
  if (route == "op") {
    const auto id = text_param(r, "id", 255);
    if (id.empty()) throw api_error{400, "missing_parameter", "id is required"};
    return op_json(q.get(id));
  }
  throw api_error{404, "unknown_route", "no such console API"};
}

nlohmann::json ops_action(api_context& ctx, std::string_view route, const nlohmann::json& body,
                          const actor&) {
  auto& q = ops_of(ctx);
  if (route == "retry") {
    const auto reset = body.value("reset_attempts", true);
    return op_json(q.retry(required_id(body), reset));
  }
  if (route == "cancel") return op_json(q.cancel(required_id(body)));
  if (route == "enqueue") {
    ops::new_op o;
    o.type = text_member(body, "type", true, 255);
    if (const auto it = body.find("payload"); it != body.end() && !it->is_null()) {
      if (!it->is_object()) throw api_error{400, "invalid_member", "\"payload\" must be a JSON object"};
      o.payload = *it;
    }
    if (const auto it = body.find("priority"); it != body.end() && !it->is_null()) {
      if (!it->is_number_integer()) throw api_error{400, "invalid_member", "\"priority\" must be an integer"};
      o.priority = it->get<std::int32_t>();
    }
    o.dedup_key = text_member(body, "dedup_key", false, 255);
    const auto result = q.enqueue(o);
    return {{"id", result.id}, {"created", result.created}};
  }
  throw api_error{404, "unknown_route", "no such console action"};
}

}  // namespace spool::serve::console
