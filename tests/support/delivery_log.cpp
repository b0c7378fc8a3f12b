#include "support/delivery_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

namespace spool::test {

std::string delivery_report::summary() const {
  std::ostringstream s;
  s << "produced " << produced << ", delivered " << delivered_ids << " ids in " << deliveries << " deliveries, acked "
    << acked_ids << ", unlogged by producers " << unlogged << "; duplicates " << duplicates << " (explained "
    << explained_duplicates << ", republished ids " << republished << "), lost " << lost.size() << ", unexplained " << unexplained.size()
    << ", order violations " << order_violations.size();
  auto some = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    s << "\n  " << what << ":";
    for (std::size_t i = 0; i < v.size() && i < 10; ++i) s << ' ' << v[i];
    if (v.size() > 10) s << " …";
  };
  some("lost", lost);
  some("unexplained", unexplained);
  some("order", order_violations);
  return s.str();
}

delivery_report check_deliveries(const std::vector<produced_record>& produced,
                                 const std::vector<delivery_record>& deliveries, bool check_group_order,
                                 const std::vector<std::string>& republished) {
  delivery_report r;
  const std::set<std::string> again(republished.begin(), republished.end());
  r.republished = static_cast<long>(again.size());
  std::map<std::string, const produced_record*> by_id;
  for (const auto& p : produced) by_id.emplace(p.id, &p);
  r.produced = static_cast<long>(by_id.size());

  std::vector<const delivery_record*> in_time;
  for (const auto& d : deliveries) in_time.push_back(&d);
  std::stable_sort(in_time.begin(), in_time.end(),
                   [](const auto* a, const auto* b) { return a->at_ns < b->at_ns; });
  r.deliveries = static_cast<long>(in_time.size());

  std::map<std::string, std::vector<const delivery_record*>> per_id;
  for (const auto* d : in_time) per_id[d->id].push_back(d);
  r.delivered_ids = static_cast<long>(per_id.size());

  for (const auto& [id, ds] : per_id) {
    if (!by_id.count(id)) ++r.unlogged;
    if (std::any_of(ds.begin(), ds.end(), [](const auto* d) { return d->acked; })) ++r.acked_ids;
    // A repeat is what at-least-once allows when a claim ended without its
    // ack: the consumer died, its ack failed, or its window lapsed (then the
    // stale holder may even start handling after the new holder acked — it
    // cannot ack). Two acked deliveries of one id are two claims that were
    // both valid: a double claim, never allowed.
    const auto acks = std::count_if(ds.begin(), ds.end(), [](const auto* d) { return d->acked; });
    const bool producer_repeat = again.count(id) > 0;
    for (std::size_t i = 1; i < ds.size(); ++i) {
      ++r.duplicates;
      if (acks <= 1 || producer_repeat) ++r.explained_duplicates;
    }
    if (acks > 1 && !producer_repeat) {
      std::string where;
      for (const auto* d : ds) {
        if (d->acked) where += (where.empty() ? "" : ", ") + d->source;
      }
      r.unexplained.push_back(id + " (acked " + std::to_string(acks) + " times: " + where + ")");
    }
  }
  // Lost: committed by a producer and never handled. (A handled message that
  // is gone from the queue was acked by someone: only an ack deletes it. An
  // ack whose log line a SIGKILL cut off is therefore not a loss; the
  // supervisor checks separately that the queue ends empty.)
  for (const auto& [id, p] : by_id) {
    if (!per_id.count(id)) r.lost.push_back(id);
  }

  if (check_group_order) {
    std::map<std::string, std::int64_t> last_seq;
    std::set<std::string> seen;
    for (const auto* d : in_time) {
      if (!seen.insert(d->id).second) continue;  // first deliveries only
      const auto p = by_id.find(d->id);
      if (p == by_id.end()) continue;
      const auto [it, fresh] = last_seq.emplace(p->second->group, p->second->seq);
      if (fresh) continue;
      if (p->second->seq <= it->second) {
        r.order_violations.push_back(p->second->group + ": seq " + std::to_string(p->second->seq) +
                                     " first handled after seq " + std::to_string(it->second));
      }
      it->second = std::max(it->second, p->second->seq);
    }
  }
  return r;
}

namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

bool to_int(const std::string& s, std::int64_t& v) {
  if (s.empty()) return false;
  try {
    std::size_t used = 0;
    v = std::stoll(s, &used);
    return used == s.size();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

void read_logs(const std::filesystem::path& dir, const std::string& prefix, std::vector<produced_record>& produced,
               std::vector<delivery_record>& deliveries, std::vector<std::string>* republished) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".log") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::map<std::string, std::size_t> open;  // id → index of its last H in this file
    std::size_t start = 0;
    for (;;) {
      const auto nl = all.find('\n', start);
      if (nl == std::string::npos) break;  // a torn last line: ignored
      const auto f = fields(all.substr(start, nl - start));
      start = nl + 1;
      std::int64_t a = 0, b = 0;
      if (f.size() == 4 && f[0] == "P" && to_int(f[3], a)) {
        produced.push_back({f[1], f[2], a});
      } else if (f.size() == 4 && f[0] == "H" && to_int(f[2], a) && to_int(f[3], b)) {
        open[f[1]] = deliveries.size();
        deliveries.push_back({f[1], a, b, false, name});
      } else if (f.size() == 2 && f[0] == "R") {
        if (republished != nullptr) republished->push_back(f[1]);
      } else if (f.size() == 3 && f[0] == "A" && to_int(f[2], a)) {
        const auto it = open.find(f[1]);
        if (it != open.end()) {
          deliveries[it->second].acked = true;
          open.erase(it);
        }
      }
    }
  }
}

log_writer::log_writer(const std::filesystem::path& file) {
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + file.string());
}

log_writer::~log_writer() {
  if (fd_ >= 0) ::close(fd_);
}

void log_writer::line(const std::string& text) {
  const std::string l = text + "\n";
  const ssize_t n = ::write(fd_, l.data(), l.size());
  if (n != static_cast<ssize_t>(l.size())) throw std::system_error(errno, std::generic_category(), "write log line");
}

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace spool::test
