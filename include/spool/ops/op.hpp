// spool::ops::op — one typed operation ("job") of the op queue and the input
// that enqueues one (op-queue.md §3). Thread safety: plain values; the free
// functions are pure and safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace spool::ops {

// Every time of the op queue: UTC, microsecond resolution (seconds on SQLite).
using time_point = std::chrono::sys_time<std::chrono::microseconds>;

// The stored status; `unknown` for any other text a legacy writer stored
// (such rows are never claimed and not counted by stats()).
enum class op_status { pending, running, done, failed, cancelled, unknown };

// "pending", "running", "done", "failed", "cancelled" or "unknown".
[[nodiscard]] std::string_view to_string(op_status s) noexcept;
// The status named by text; unknown for anything else.
[[nodiscard]] op_status parse_status(std::string_view text) noexcept;

// An op as stored (op-queue.md §3.1). Rows Spool cannot fully decode are
// still returned: the decodable fields are filled in and `defect` says what
// failed and with which value.
struct op {
  std::string id;
  std::string type;
  nlohmann::json payload = nlohmann::json::object();  // always an object
  op_status status = op_status::pending;
  std::int32_t priority = 0;
  std::int32_t attempts = 0;
  std::int32_t max_attempts = 3;
  std::string last_error;  // NULL reads as empty
  time_point enqueued_at{};
  std::optional<time_point> started_at;
  std::optional<time_point> finished_at;
  std::optional<time_point> not_before;
  std::optional<std::string> dedup_key;
  std::optional<std::string> lease_owner;
  std::optional<time_point> heartbeat_at;
  // The fencing token of the claim: filled only in the op that dequeue()
  // returns, never serialised, empty in get() and list() results.
  std::optional<std::string> lease_token;
  std::optional<std::string> defect;
  // The stored status text (differs from to_string(status) only for unknown).
  std::string status_text = "pending";
};

// The fields a caller may set when enqueuing (op-queue.md §3.1, §3.3).
struct new_op {
  std::string id;    // empty: 32 random hex characters from the OS CSPRNG
  std::string type;  // required: 1–255 bytes of UTF-8, no control characters
  nlohmann::json payload = nlohmann::json::object();  // a JSON object; null means {}
  std::int32_t priority = 0;                          // higher runs first
  std::int32_t max_attempts = 0;                      // 0 means 3; negative is invalid
  // Earliest run time (absolute), or a delay computed on the database's clock;
  // setting both is invalid_argument.
  std::optional<time_point> not_before;
  std::optional<std::chrono::microseconds> delay;
  std::string dedup_key;  // empty: no coalescing (op-queue.md §6)
};

// What enqueue did with one op.
enum class enqueue_status {
  created,         // inserted now
  deduplicated,    // not inserted: a pending op holds its dedup key (§6)
  already_exists,  // not inserted: an op with the caller's id exists (a batch retried after
                   // in_doubt or a producer's restart); enqueue_batch only, enqueue raises
};

struct enqueue_result {
  std::string id;        // the new op's id; with on_duplicate::return_existing
                         // the holder's id; empty for a batch item that
                         // collided without return_existing; the caller's id
                         // when status is already_exists
  bool created = false;  // status == created
  enqueue_status status = enqueue_status::deduplicated;
  friend bool operator==(const enqueue_result&, const enqueue_result&) = default;
};

// The JSON form of op-queue.md §3.1: filex's keys and omission rules, times as
// RFC 3339 UTC with Z (fractional seconds only when not zero), lease_token
// never included.
[[nodiscard]] nlohmann::json to_json(const op& o);
// Parses the JSON form (any RFC 3339 offset). Errors: invalid_argument.
[[nodiscard]] op op_from_json(const nlohmann::json& j);

// RFC 3339 UTC with Z; fractional seconds only when not zero.
[[nodiscard]] std::string format_time(time_point t);
// Parses RFC 3339 / ISO 8601 ("T" or a space, optional fraction, Z or
// ±HH:MM; no zone means UTC). Errors: invalid_argument naming the text.
[[nodiscard]] time_point parse_time(std::string_view text);

}  // namespace spool::ops
