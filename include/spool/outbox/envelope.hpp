// spool::outbox envelopes: the unit the writer inserts and the store leases
// (outbox.md §2), their limits, validation and canonical JSON.
// Thread safety: plain values; envelope_builder is safe from many threads when
// its id generator is.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace spool::outbox {

// UTC, microseconds; 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999Z.
using time_point = std::chrono::sys_time<std::chrono::microseconds>;

// The lowest and highest time Spool stores.
[[nodiscard]] time_point min_time() noexcept;
[[nodiscard]] time_point max_time() noexcept;

// Size limits in bytes (§2.1). A default-constructed value holds the defaults;
// any field outside 1..ceiling is invalid (reason invalid_limits).
struct limits {
  std::size_t max_id_bytes = 255;
  std::size_t max_topic_bytes = 255;
  std::size_t max_ordering_key_bytes = 255;
  std::size_t max_idempotency_key_bytes = 255;
  std::size_t max_payload_bytes = 1'048'576;
  std::size_t max_metadata_entries = 64;
  std::size_t max_metadata_bytes = 16'384;
};

// Throws error(invalid_argument, invalid_limits) naming the field and value.
void validate(const limits& l);

// A database-assigned position: (xact_id, seq) on PostgreSQL, seq on SQLite
// (xact_id 0). Smaller means earlier.
struct position {
  std::uint64_t xact_id = 0;
  std::int64_t seq = 0;
  auto operator<=>(const position&) const = default;
};

struct envelope {
  std::string id;
  std::string topic;
  std::string payload;  // opaque bytes; empty is allowed
  std::uint16_t payload_version = 1;
  std::map<std::string, std::string> metadata;
  std::string ordering_key;     // empty: unordered
  std::string idempotency_key;  // empty: none
  std::optional<time_point> available_at;  // unset: database now at insert
  std::optional<time_point> created_at;    // unset: database now at insert
  std::uint32_t claim_count = 0;
  std::uint32_t failure_count = 0;
  std::optional<position> pos;  // read-only, set by the store
};

// The §2.2 rules in order; the first failing one decides. Throws
// error(invalid_argument) with the rule's reason (invalid_limits, id_required,
// id_too_large, payload_version_required, counters_not_zero,
// timestamp_out_of_range, topic_required, topic_too_large, payload_too_large,
// metadata_entries_too_large, metadata_too_large, ordering_key_too_large,
// idempotency_key_too_large, invalid_encoding). Messages never carry content.
void validate_for_insert(const envelope& e, const limits& l = {});

// Truncates toward the past to whole microseconds.
template <class Duration>
[[nodiscard]] time_point to_time_point(std::chrono::sys_time<Duration> t) {
  return std::chrono::floor<std::chrono::microseconds>(t);
}

// What envelope_builder::build takes.
struct envelope_params {
  std::string topic;
  std::string payload;
  std::uint16_t payload_version = 1;  // 0 becomes 1
  std::map<std::string, std::string> metadata;
  std::string ordering_key;
  std::string idempotency_key;
  std::optional<std::chrono::sys_time<std::chrono::nanoseconds>> available_at;
};

class envelope_builder {
 public:
  using id_generator = std::function<std::string()>;
  // Default generator: lowercase UUIDv7. Errors: invalid_limits.
  explicit envelope_builder(limits l = {}, id_generator gen = {});
  // Checks rules 6–14, generates the id (an exception becomes
  // id_generation_failed, the original nested), then validate_for_insert.
  [[nodiscard]] envelope build(envelope_params params) const;

 private:
  limits limits_;
  id_generator gen_;
};

// The canonical JSON of §2.4: same bytes on every delivery.
// Errors: invalid_argument (created_at_required) when created_at is unset.
[[nodiscard]] std::string canonical_json(const envelope& e);
// The inverse; counters and available_at stay unset/zero.
// Errors: invalid_argument naming the problem.
[[nodiscard]] envelope parse_canonical_json(std::string_view json);

// RFC 3339 UTC with six fractional digits and Z.
[[nodiscard]] std::string format_time(time_point t);
// RFC 3339 with any offset; finer than µs truncated toward the past.
// Errors: invalid_argument (timestamp_out_of_range or a malformed text).
[[nodiscard]] time_point parse_time(std::string_view text);

}  // namespace spool::outbox
