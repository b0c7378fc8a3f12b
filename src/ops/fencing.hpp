// The fencing rules of op-queue.md §4.5 in one place: how an outcome call
// that did not apply is reported, given the row as the call found it.
#pragma once

#include "ops/store.hpp"

namespace spool::ops::detail {

// Returns normally when the change applied, or when the call replays an
// outcome already recorded under the same token (an ack on done, a fail on
// failed). Throws not_found, lease_lost or invalid_state (naming the status)
// otherwise.
void check_fence(const fence_result& result, const fence_request& request);

}  // namespace spool::ops::detail
