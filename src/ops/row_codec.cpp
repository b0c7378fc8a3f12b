#include "ops/row_codec.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "ops/time.hpp"

namespace spool::ops::detail {

namespace {

std::string excerpt(const std::string& v) { return v.size() <= 64 ? v : v.substr(0, 64) + "…"; }

class decoder {
 public:
  decoder(const row& r, std::size_t first) : r_(r), first_(first) {}

  const std::optional<std::string>& col(std::size_t i) const { return r_.at(first_ + i); }

  std::string text(std::size_t i) const { return col(i).value_or(""); }

  std::int32_t int32(std::size_t i, const char* name, std::int32_t fallback) {
    const auto& v = col(i);
    if (!v) {
      defect(fmt::format("{} is NULL", name));
      return fallback;
    }
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc{} || end != v->data() + v->size() || n < std::numeric_limits<std::int32_t>::min() ||
        n > std::numeric_limits<std::int32_t>::max()) {
      defect(fmt::format("{} is not an int32: \"{}\"", name, excerpt(*v)));
      return fallback;
    }
    return static_cast<std::int32_t>(n);
  }

  std::optional<time_point> time(std::size_t i, const char* name) {
    const auto& v = col(i);
    if (!v) return std::nullopt;
    auto t = try_parse_time(*v);
    if (!t) defect(fmt::format("{} is not a timestamp Spool can read: \"{}\"", name, excerpt(*v)));
    return t;
  }

  void defect(std::string what) {
    if (!defects_.empty()) defects_ += "; ";
    defects_ += what;
  }
  std::optional<std::string> defects() const {
    return defects_.empty() ? std::nullopt : std::optional<std::string>(defects_);
  }

 private:
  const row& r_;
  std::size_t first_;
  std::string defects_;
};

}  // namespace

op decode_row(const row& r, bool with_token, std::size_t first) {
  decoder d(r, first);
  op o;
  o.id = d.text(0);
  o.type = d.text(1);
  const std::string payload = d.text(2);
  try {
    auto j = nlohmann::json::parse(payload);
    if (j.is_object()) {
      o.payload = std::move(j);
    } else {
      d.defect(fmt::format("payload is not a JSON object: {}", excerpt(payload)));
    }
  } catch (const nlohmann::json::exception&) {
    d.defect(fmt::format("payload is not JSON: \"{}\"", excerpt(payload)));
  }
  o.status_text = d.text(3);
  o.status = parse_status(o.status_text);
  if (o.status == op_status::unknown) d.defect(fmt::format("unknown status \"{}\"", excerpt(o.status_text)));
  o.priority = d.int32(4, "priority", 0);
  o.attempts = d.int32(5, "attempts", 0);
  o.max_attempts = d.int32(6, "max_attempts", 3);
  o.last_error = d.text(7);
  if (auto t = d.time(8, "enqueued_at")) o.enqueued_at = *t;
  o.started_at = d.time(9, "started_at");
  o.finished_at = d.time(10, "finished_at");
  o.not_before = d.time(11, "not_before");
  o.dedup_key = d.col(12);
  o.lease_owner = d.col(13);
  if (with_token) o.lease_token = d.col(14);
  o.heartbeat_at = d.time(15, "heartbeat_at");
  o.defect = d.defects();
  return o;
}

}  // namespace spool::ops::detail
