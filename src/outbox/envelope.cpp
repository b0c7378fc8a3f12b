// Envelope limits, the §2.2 validation order and the builder (outbox.md §2).
#include "spool/outbox/envelope.hpp"

#include <fmt/format.h>

#include <exception>

#include "common/uuid.hpp"
#include "outbox/text.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

namespace {

[[noreturn]] void fail(const char* reason, const std::string& message) {
  throw error(errc::invalid_argument, message, reason);
}

void check_limit(const char* field, std::size_t value, std::size_t ceiling) {
  if (value < 1 || value > ceiling) {
    fail("invalid_limits", fmt::format("limits: {} = {} is outside 1..{}", field, value, ceiling));
  }
}

void check_time(const char* field, const std::optional<time_point>& t) {
  if (t && (*t < min_time() || *t > max_time())) {
    fail("timestamp_out_of_range",
         fmt::format("{} is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999Z", field));
  }
}

// Rules 7–14 (everything but the id, version and counters).
void check_content(const envelope& e, const limits& l, const char* prefix) {
  if (e.topic.empty()) fail("topic_required", fmt::format("{}topic is required", prefix));
  if (e.topic.size() > l.max_topic_bytes) {
    fail("topic_too_large", fmt::format("{}topic is {} bytes; the limit is {}", prefix, e.topic.size(), l.max_topic_bytes));
  }
  if (e.payload.size() > l.max_payload_bytes) {
    fail("payload_too_large",
         fmt::format("{}payload is {} bytes; the limit is {}", prefix, e.payload.size(), l.max_payload_bytes));
  }
  if (e.metadata.size() > l.max_metadata_entries) {
    fail("metadata_entries_too_large", fmt::format("{}metadata has {} entries; the limit is {}", prefix,
                                                   e.metadata.size(), l.max_metadata_entries));
  }
  std::size_t bytes = 0;
  for (const auto& [k, v] : e.metadata) bytes += k.size() + v.size();
  if (bytes > l.max_metadata_bytes) {
    fail("metadata_too_large",
         fmt::format("{}metadata is {} bytes; the limit is {}", prefix, bytes, l.max_metadata_bytes));
  }
  if (e.ordering_key.size() > l.max_ordering_key_bytes) {
    fail("ordering_key_too_large", fmt::format("{}ordering_key is {} bytes; the limit is {}", prefix,
                                               e.ordering_key.size(), l.max_ordering_key_bytes));
  }
  if (e.idempotency_key.size() > l.max_idempotency_key_bytes) {
    fail("idempotency_key_too_large", fmt::format("{}idempotency_key is {} bytes; the limit is {}", prefix,
                                                  e.idempotency_key.size(), l.max_idempotency_key_bytes));
  }
  const auto enc = [&](const std::string& s, const std::string& field) {
    if (!detail::valid_utf8(s)) {
      fail("invalid_encoding", fmt::format("{}{} is not well-formed UTF-8 without NUL", prefix, field));
    }
  };
  enc(e.id, "id");
  enc(e.topic, "topic");
  enc(e.ordering_key, "ordering_key");
  enc(e.idempotency_key, "idempotency_key");
  for (const auto& [k, v] : e.metadata) {
    enc(k, "a metadata key");
    enc(v, "a metadata value");
  }
}

}  // namespace

time_point min_time() noexcept {
  return time_point(std::chrono::sys_days(std::chrono::year(1) / 1 / 1).time_since_epoch());
}
time_point max_time() noexcept {
  return time_point(std::chrono::sys_days(std::chrono::year(9999) / 12 / 31).time_since_epoch()) +
         std::chrono::hours(24) - std::chrono::microseconds(1);
}

void validate(const limits& l) {
  check_limit("max_id_bytes", l.max_id_bytes, 255);
  check_limit("max_topic_bytes", l.max_topic_bytes, 255);
  check_limit("max_ordering_key_bytes", l.max_ordering_key_bytes, 255);
  check_limit("max_idempotency_key_bytes", l.max_idempotency_key_bytes, 255);
  check_limit("max_payload_bytes", l.max_payload_bytes, 1'048'576);
  check_limit("max_metadata_entries", l.max_metadata_entries, 1'024);
  check_limit("max_metadata_bytes", l.max_metadata_bytes, 16'384);
}

void validate_for_insert(const envelope& e, const limits& l) {
  validate(l);
  if (e.id.empty()) fail("id_required", "id is required");
  if (e.id.size() > l.max_id_bytes) {
    fail("id_too_large", fmt::format("id is {} bytes; the limit is {}", e.id.size(), l.max_id_bytes));
  }
  if (e.payload_version == 0) fail("payload_version_required", "payload_version must be 1..65535");
  if (e.claim_count != 0 || e.failure_count != 0) {
    fail("counters_not_zero", fmt::format("claim_count ({}) and failure_count ({}) must be 0 on insert",
                                          e.claim_count, e.failure_count));
  }
  check_time("available_at", e.available_at);
  check_time("created_at", e.created_at);
  check_content(e, l, "");
}

envelope_builder::envelope_builder(limits l, id_generator gen) : limits_(l), gen_(std::move(gen)) {
  validate(limits_);
  if (!gen_) gen_ = [] { return spool::detail::uuid_v7(); };
}

envelope envelope_builder::build(envelope_params p) const {
  envelope e;
  e.topic = std::move(p.topic);
  e.payload = std::move(p.payload);
  e.payload_version = p.payload_version == 0 ? 1 : p.payload_version;
  e.metadata = std::move(p.metadata);
  e.ordering_key = std::move(p.ordering_key);
  e.idempotency_key = std::move(p.idempotency_key);
  if (p.available_at) {
    // A nanosecond sys_time spans 1677..2262, always inside Spool's range.
    e.available_at = std::chrono::floor<std::chrono::microseconds>(*p.available_at);
  }
  check_content(e, limits_, "");
  try {
    e.id = gen_();
  } catch (...) {
    // The original exception stays reachable through std::rethrow_if_nested.
    std::throw_with_nested(error(errc::invalid_argument, "the id generator threw", "id_generation_failed"));
  }
  validate_for_insert(e, limits_);
  return e;
}

}  // namespace spool::outbox
