// How a failed delivery is classified and when it is tried again (outbox.md
// §7 rules 3, 4, 11).
#include "outbox/relay/impl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/log.hpp"
#include "runtime/retry_curve.hpp"
#include "spool/error.hpp"

namespace spool::outbox {

using spool::detail::log;
using namespace std::chrono_literals;

std::chrono::milliseconds backoff_ceiling(std::uint32_t failure, const backoff_policy& p) noexcept {
  const double c = spool::detail::exponential_delay(failure, static_cast<double>(p.initial.count()), 2,
                                                   static_cast<double>(p.cap.count()));
  return std::chrono::milliseconds(static_cast<std::int64_t>(c));
}

std::chrono::milliseconds backoff_delay(std::uint32_t failure, const backoff_policy& p, double u) noexcept {
  const auto ceiling = static_cast<double>(backoff_ceiling(failure, p).count());
  const double d = ceiling / 2.0 + (ceiling / 2.0) * std::clamp(u, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(d)));
}

namespace {

double uniform01() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace

bool detail::valid_failure_code(std::string_view code) {
  if (code.empty() || code.size() > 64) return false;
  return std::all_of(code.begin(), code.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

// The retry delay of failure n (rule 3, 4, 11).
std::chrono::milliseconds relay::impl::retry_delay(std::uint32_t n, const sink_outcome& out) {
  std::chrono::milliseconds d;
  if (o.backoff_fn) {
    try {
      d = o.backoff_fn(n);
      if (d < 0ms || d > o.backoff.cap) {
        log().warn("outbox relay {}: invalid_backoff: backoff returned {} ms, clamped to [0, {} ms]", owner,
                   d.count(), o.backoff.cap.count());
        d = std::clamp(d, 0ms, o.backoff.cap);
      }
    } catch (...) {
      log().warn("outbox relay {}: backoff_threw: the backoff callback threw; retrying without delay",
                 owner);
      d = 0ms;
    }
  } else {
    d = backoff_delay(n, o.backoff, uniform01());
  }
  if (out.retry_after && *out.retry_after > d) d = *out.retry_after;
  const auto max = std::chrono::duration_cast<std::chrono::milliseconds>(st.options().max_retry_delay);
  return std::min(d, max);
}

// The class after the optional classifier (rule 3, 11).
outcome_class relay::impl::classify(const claimed_message& cm, sink_outcome& out) {
  auto c = out.kind;
  if (o.classifier) {
    try {
      c = o.classifier(cm, out);
    } catch (...) {
      out = sink_outcome::transient("classifier_threw", "the classifier threw");
      return outcome_class::transient;
    }
  }
  if (c != outcome_class::delivered && c != outcome_class::transient && c != outcome_class::permanent) {
    out = sink_outcome::transient("invalid_error_class",
                                  fmt::format("invalid outcome class {}", static_cast<int>(c)));
    return outcome_class::transient;
  }
  if (c != outcome_class::delivered && !detail::valid_failure_code(out.code)) out.code = "sink_failed";
  return c;
}

}  // namespace spool::outbox
