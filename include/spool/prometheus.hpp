// spool::prometheus — the runtimes' metrics snapshots in the Prometheus text
// exposition format 0.0.4, under the names of docs/METRICS.md. The CLI's
// --metrics-addr endpoint serves exactly this text; an application that runs
// the runtimes itself can serve it from its own HTTP server.
// Thread safety: text_writer is a plain value (use one per scrape); the free
// functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/metrics.hpp"

namespace spool::ops {
struct pool_metrics;
struct queue_stats;
}  // namespace spool::ops
namespace spool::outbox {
struct relay_metrics;
struct backlog_info;
struct horizon_info;
}  // namespace spool::outbox
namespace spool::mq {
struct consumer_metrics;
struct queue_metrics;
}  // namespace spool::mq

namespace spool {
struct listener_info;
}

namespace spool::prometheus {

// Label names and values, written in this order.
using labels = std::vector<std::pair<std::string, std::string>>;

// The Content-Type of the exposition.
inline constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

// Collects samples grouped by metric family, so a family's samples stay
// together (as the format requires) however the calls interleave.
class text_writer {
 public:
  // One sample of a counter (name should end in _total). help and type are
  // written once per family, from its first call. Errors: invalid_argument
  // for an invalid metric or label name, or a name reused with another type.
  void counter(std::string_view name, std::string_view help, const labels& l, std::uint64_t value);
  // One sample of a gauge. Errors: as counter().
  void gauge(std::string_view name, std::string_view help, const labels& l, double value);
  // name_bucket{…,le} (cumulative, +Inf last), name_sum and name_count.
  // Errors: as counter(), and a label named le.
  void histogram(std::string_view name, std::string_view help, const labels& l, const latency_histogram& h);

  // The exposition: families in order of first use, each "# HELP", "# TYPE"
  // then its samples; every line ends in '\n'. Empty when nothing was added.
  [[nodiscard]] std::string str() const;

 private:
  struct family {
    std::string name, help, type, samples;
  };
  family& family_of(std::string_view name, std::string_view help, std::string_view type, const labels& l);
  std::vector<family> families_;
};

// A sample value: integral values below 2^53 without a fraction ("5"),
// others in the shortest form that reads back exactly; "+Inf", "-Inf", "NaN".
[[nodiscard]] std::string format_value(double v);
// Label value escaping: backslash, double quote and newline.
[[nodiscard]] std::string escape_label_value(std::string_view v);
// HELP text escaping: backslash and newline.
[[nodiscard]] std::string escape_help(std::string_view v);

// The snapshots under their documented names (docs/METRICS.md); base labels
// come first on every sample (e.g. owner, table, queue).
void write(text_writer& w, const ops::pool_metrics& m, const labels& base);
void write(text_writer& w, const outbox::relay_metrics& m, const labels& base);
void write(text_writer& w, const mq::consumer_metrics& m, const labels& base);
// Backlog gauges read from the database at scrape time.
void write(text_writer& w, const ops::queue_stats& s, const labels& base);
void write(text_writer& w, const outbox::backlog_info& b, const labels& base);
void write(text_writer& w, const mq::queue_metrics& m, const labels& base);
// The transaction horizon that holds ordered outbox claims back (nothing
// where it does not apply, as on SQLite): spool_outbox_horizon_held_rows and
// spool_outbox_horizon_oldest_transaction_age_seconds.
void write(text_writer& w, const outbox::horizon_info& h, const labels& base);
// The shared LISTEN connection of a runtime with notify on (nothing when
// inactive): spool_listener_connected and spool_listener_reconnects_total.
void write(text_writer& w, const listener_info& l, const labels& base);

}  // namespace spool::prometheus
