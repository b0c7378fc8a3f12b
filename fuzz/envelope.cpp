// Fuzz target: outbox envelopes (outbox.md §2). An envelope built from fuzz
// bytes either passes validate_for_insert or raises
// spool::error(invalid_argument) with a reason; a valid one has a canonical
// JSON that parses back to the same fields and re-renders to the same bytes
// (§2.4: same bytes on every delivery). Raw bytes given to
// parse_canonical_json and parse_time parse or raise invalid_argument, and
// what parses renders to a fixed point.
#include "spool/outbox/envelope.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"

using spool::errc;
using spool::fuzz::check;
using spool::fuzz::check_error;
namespace ob = spool::outbox;

namespace {

std::optional<ob::time_point> fuzz_time(FuzzedDataProvider& in) {
  if (!in.ConsumeBool()) return std::nullopt;
  const std::int64_t lo = ob::min_time().time_since_epoch().count();
  const std::int64_t hi = ob::max_time().time_since_epoch().count();
  const std::int64_t slack = in.ConsumeIntegralInRange<std::int64_t>(0, 2);
  return ob::time_point(
      std::chrono::microseconds(in.ConsumeIntegralInRange<std::int64_t>(lo - slack, hi + slack)));
}

void same_fields(const ob::envelope& a, const ob::envelope& b) {
  check(
      a.id == b.id && a.topic == b.topic && a.payload == b.payload && a.payload_version == b.payload_version,
      "canonical JSON lost id, topic, payload or payload_version");
  // §2.4: empty metadata keys are omitted from the canonical JSON.
  auto without_empty_key = [](std::map<std::string, std::string> m) {
    m.erase(std::string());
    return m;
  };
  check(without_empty_key(a.metadata) == without_empty_key(b.metadata), "canonical JSON lost metadata");
  check(a.ordering_key == b.ordering_key && a.idempotency_key == b.idempotency_key,
        "canonical JSON lost a key");
  check(a.created_at == b.created_at, "canonical JSON lost created_at");
}

void built_envelope(FuzzedDataProvider& in) {
  ob::limits l;
  if (in.ConsumeBool()) {
    l.max_id_bytes = in.ConsumeIntegralInRange<std::size_t>(0, 300);
    l.max_topic_bytes = in.ConsumeIntegralInRange<std::size_t>(0, 300);
    l.max_metadata_entries = in.ConsumeIntegralInRange<std::size_t>(0, 70);
    l.max_metadata_bytes = in.ConsumeIntegralInRange<std::size_t>(0, 20000);
  }
  ob::envelope e;
  e.id = in.ConsumeRandomLengthString(300);
  e.topic = in.ConsumeRandomLengthString(300);
  e.payload = in.ConsumeRandomLengthString(512);
  e.payload_version = in.ConsumeIntegral<std::uint16_t>();
  const int entries = in.ConsumeIntegralInRange(0, 8);
  for (int i = 0; i < entries; ++i) {
    std::string k = in.ConsumeRandomLengthString(40);
    e.metadata[std::move(k)] = in.ConsumeRandomLengthString(80);
  }
  e.ordering_key = in.ConsumeRandomLengthString(300);
  e.idempotency_key = in.ConsumeRandomLengthString(300);
  e.available_at = fuzz_time(in);
  e.created_at = fuzz_time(in);
  if (in.ConsumeIntegralInRange(0, 7) == 0) e.claim_count = in.ConsumeIntegral<std::uint32_t>();
  if (in.ConsumeIntegralInRange(0, 7) == 0) e.failure_count = in.ConsumeIntegral<std::uint32_t>();

  try {
    ob::validate_for_insert(e, l);
  } catch (const spool::error& err) {
    check_error(err, errc::invalid_argument);
    check(!err.reason().empty(), "an envelope rejected without a reason");
    // Messages never carry content (§2.2): no id, topic or key text. Checked
    // for texts with a control byte, which no message of Spool's own has.
    for (const std::string* s : {&e.id, &e.topic, &e.ordering_key, &e.idempotency_key}) {
      const bool marked =
          std::any_of(s->begin(), s->end(), [](char c) { return c > 0 && c < 0x20 && c != '\n'; });
      if (marked && s->size() >= 8)
        check(std::string_view(err.what()).find(*s) == std::string_view::npos,
              "an envelope error quotes envelope content");
    }
    return;
  }
  if (!e.created_at) e.created_at = ob::min_time();
  const std::string json = ob::canonical_json(e);
  ob::envelope back;
  try {
    back = ob::parse_canonical_json(json);
  } catch (const spool::error&) {
    spool::fuzz::fail("the canonical JSON of a valid envelope does not parse");
  }
  same_fields(e, back);
  check(ob::canonical_json(back) == json, "canonical JSON is not stable");
}

void raw_text(std::string_view text) {
  try {
    const ob::envelope e = ob::parse_canonical_json(text);
    const std::string json = ob::canonical_json(e);
    const ob::envelope again = ob::parse_canonical_json(json);
    same_fields(e, again);
    check(ob::canonical_json(again) == json, "canonical JSON of parsed text is not a fixed point");
  } catch (const spool::error& err) {
    check_error(err, errc::invalid_argument);
  }
  try {
    const ob::time_point t = ob::parse_time(text);
    check(t >= ob::min_time() && t <= ob::max_time(), "parse_time outside 0001..9999");
    check(ob::parse_time(ob::format_time(t)) == t, "format_time does not round-trip");
  } catch (const spool::error& err) {
    check_error(err, errc::invalid_argument);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  raw_text(std::string_view(reinterpret_cast<const char*>(data), size));
  FuzzedDataProvider in(data, size);
  built_envelope(in);
  return 0;
}
