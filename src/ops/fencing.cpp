#include "ops/fencing.hpp"

#include <fmt/format.h>

#include "spool/error.hpp"

namespace spool::ops::detail {

namespace {

const char* verb(fence_request::kind k) {
  switch (k) {
    case fence_request::kind::ack: return "ack";
    case fence_request::kind::fail: return "fail";
    case fence_request::kind::release: return "release";
    case fence_request::kind::heartbeat: return "heartbeat";
  }
  return "outcome";
}

// The outcome a replay would find already recorded (with the token kept).
bool replay_of(fence_request::kind k, const std::string& status) {
  return (k == fence_request::kind::ack && status == "done") || (k == fence_request::kind::fail && status == "failed");
}

}  // namespace

void check_fence(const fence_result& r, const fence_request& rq) {
  if (!r.found) throw error(errc::not_found, fmt::format("{}: no op with id \"{}\"", verb(rq.what), rq.id));
  if (r.applied) return;
  if (rq.token) {
    if (r.status != "running" && r.lease_token == rq.token && replay_of(rq.what, r.status)) return;
    throw error(errc::lease_lost,
                fmt::format("{}: the claim of op \"{}\" is no longer current (the op is {}{})", verb(rq.what), rq.id,
                            r.status, r.status == "running" ? " under another claim" : ""));
  }
  if (r.status == "running") {
    throw error(errc::lease_lost,
                fmt::format("{}: op \"{}\" is running under a lease token; pass the token of the claim", verb(rq.what),
                            rq.id));
  }
  throw error(errc::invalid_state,
              fmt::format("{}: op \"{}\" is {}, not running", verb(rq.what), rq.id, r.status.empty() ? "?" : r.status),
              "invalid_state");
}

}  // namespace spool::ops::detail
