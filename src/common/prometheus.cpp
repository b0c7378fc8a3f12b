// The Prometheus text exposition (format 0.0.4): names, escaping and families.
// It knows no capability; the runtimes' snapshots are written by
// runtime/prometheus_metrics.cpp, one layer up.
#include "spool/prometheus.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "spool/error.hpp"

namespace spool::prometheus {

namespace {

bool valid_name(std::string_view name, bool colon_allowed) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_allowed && c == ':');
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// {a="x",b="y"} with extra appended last (le of a bucket); "" without labels.
std::string label_text(const labels& l, const std::pair<std::string, std::string>* extra = nullptr) {
  if (l.empty() && extra == nullptr) return {};
  std::string out = "{";
  auto add = [&out](const std::pair<std::string, std::string>& kv) {
    if (out.size() > 1) out += ',';
    out += fmt::format("{}=\"{}\"", kv.first, escape_label_value(kv.second));
  };
  for (const auto& kv : l) add(kv);
  if (extra != nullptr) add(*extra);
  out += '}';
  return out;
}

}  // namespace

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    return fmt::format("{}", static_cast<std::int64_t>(v));
  }
  return fmt::format("{}", v);  // fmt's shortest round-trip form
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

text_writer::family& text_writer::family_of(std::string_view name, std::string_view help,
                                            std::string_view type, const labels& l) {
  if (!valid_name(name, true)) {
    throw error(errc::invalid_argument, fmt::format("invalid Prometheus metric name \"{}\"", name));
  }
  for (const auto& [label, value] : l) {
    if (!valid_name(label, false) || label.starts_with("__")) {
      throw error(errc::invalid_argument,
                  fmt::format("invalid Prometheus label name \"{}\" on {}", label, name));
    }
  }
  const auto it =
      std::find_if(families_.begin(), families_.end(), [&](const family& f) { return f.name == name; });
  if (it == families_.end()) {
    return families_.emplace_back(family{std::string(name), std::string(help), std::string(type), {}});
  }
  if (it->type != type) {
    throw error(errc::invalid_argument,
                fmt::format("Prometheus metric \"{}\" used as {} and as {}", name, it->type, type));
  }
  return *it;
}

void text_writer::counter(std::string_view name, std::string_view help, const labels& l,
                          std::uint64_t value) {
  family_of(name, help, "counter", l).samples += fmt::format("{}{} {}\n", name, label_text(l), value);
}

void text_writer::gauge(std::string_view name, std::string_view help, const labels& l, double value) {
  family_of(name, help, "gauge", l).samples +=
      fmt::format("{}{} {}\n", name, label_text(l), format_value(value));
}

void text_writer::histogram(std::string_view name, std::string_view help, const labels& l,
                            const latency_histogram& h) {
  for (const auto& kv : l) {
    if (kv.first == "le")
      throw error(errc::invalid_argument, fmt::format("histogram {} has a label named le", name));
  }
  auto& f = family_of(name, help, "histogram", l);
  for (std::size_t i = 0; i <= latency_histogram::bounds.size(); ++i) {
    const std::pair<std::string, std::string> le{
        "le", i < latency_histogram::bounds.size() ? format_value(latency_histogram::bounds[i]) : "+Inf"};
    f.samples += fmt::format("{}_bucket{} {}\n", name, label_text(l, &le), h.cumulative(i));
  }
  f.samples += fmt::format("{}_sum{} {}\n", name, label_text(l), format_value(h.sum_seconds));
  f.samples += fmt::format("{}_count{} {}\n", name, label_text(l), h.count);
}

std::string text_writer::str() const {
  std::string out;
  for (const auto& f : families_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, escape_help(f.help), f.name, f.type);
    out += f.samples;
  }
  return out;
}

}  // namespace spool::prometheus
