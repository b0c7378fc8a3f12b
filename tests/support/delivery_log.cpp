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
#include <string_view>
#include <system_error>

namespace spool::test {

std::string delivery_report::summary() const {
  std::ostringstream s;
  s << "produced " << produced << ", delivered " << delivered_ids << " ids in " << deliveries
    << " deliveries, acked " << acked_ids << ", unlogged by producers " << unlogged << "; duplicates "
    << duplicates << " (explained " << explained_duplicates << ", republished ids " << republished
    << "), lost " << lost.size() << ", acked twice " << unexplained.size() << ", double claims "
    << double_claims.size() << ", order violations " << order_violations.size() << ", final-state mismatches "
    << final_state.size();
  auto some = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    s << "\n  " << what << ":";
    for (std::size_t i = 0; i < v.size() && i < 10; ++i) s << ' ' << v[i];
    if (v.size() > 10) s << " …";
  };
  some("lost", lost);
  some("acked twice", unexplained);
  some("double claims", double_claims);
  some("order", order_violations);
  some("final state", final_state);
  return s.str();
}

namespace {

std::string as_ms(std::int64_t ns) { return std::to_string(ns / 1'000'000) + " ms"; }

// Claims of one id in claim order (the count increases with every claim):
// the same count twice is two claims that both believed themselves the
// n-th; a later claim handled before an earlier claim's window could have
// ended is a second holder inside a live window.
void find_double_claims(const std::string& id, const std::vector<const delivery_record*>& ds,
                        const check_options& o, std::vector<std::string>& out) {
  std::vector<const delivery_record*> claims;
  for (const auto* d : ds) {
    if (d->receive_count > 0) claims.push_back(d);
  }
  std::stable_sort(claims.begin(), claims.end(),
                   [](const auto* a, const auto* b) { return a->receive_count < b->receive_count; });
  for (std::size_t i = 1; i < claims.size(); ++i) {
    if (claims[i]->receive_count == claims[i - 1]->receive_count) {
      out.push_back(id + " (count " + std::to_string(claims[i]->receive_count) +
                    " twice: " + claims[i - 1]->source + ", " + claims[i]->source + ")");
      return;
    }
  }
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const auto* first = claims[i];
    if (first->window_ns <= 0) continue;
    const std::int64_t live_until = first->asked_ns + first->window_ns;
    for (std::size_t j = i + 1; j < claims.size(); ++j) {
      if (claims[j]->at_ns + o.tolerance_ns < live_until) {
        out.push_back(id + " (count " + std::to_string(claims[j]->receive_count) + " by " +
                      claims[j]->source + " handled " + as_ms(live_until - claims[j]->at_ns) +
                      " before the window of count " + std::to_string(first->receive_count) + " by " +
                      first->source + " could end)");
        return;
      }
    }
  }
}

// Strict group order against the acks: a delivery of seq n at time t is a
// violation when an earlier seq's first ack was only sent after t (that ack
// committed later still, and the claim of seq n came before t).
void find_strict_order_violations(const std::map<std::string, const produced_record*>& by_id,
                                  const std::vector<const delivery_record*>& in_time, const check_options& o,
                                  std::vector<std::string>& out) {
  std::map<std::string, std::map<std::int64_t, std::int64_t>> first_ack;  // group → seq → first ack sent
  for (const auto* d : in_time) {
    if (!d->acked || d->ack_started_ns <= 0) continue;
    const auto p = by_id.find(d->id);
    if (p == by_id.end()) continue;
    auto& at = first_ack[p->second->group];
    const auto [it, fresh] = at.emplace(p->second->seq, d->ack_started_ns);
    if (!fresh) it->second = std::min(it->second, d->ack_started_ns);
  }
  // Per group: seq → the latest first-ack of any seq up to it, and which seq.
  std::map<std::string, std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>>> latest;
  for (const auto& [group, acks] : first_ack) {
    std::pair<std::int64_t, std::int64_t> running{0, -1};
    for (const auto& [seq, at] : acks) {
      if (at > running.first) running = {at, seq};
      latest[group][seq] = running;
    }
  }
  for (const auto* d : in_time) {
    const auto p = by_id.find(d->id);
    if (p == by_id.end()) continue;
    const auto g = latest.find(p->second->group);
    if (g == latest.end()) continue;
    auto it = g->second.lower_bound(p->second->seq);  // first seq ≥ this one
    if (it == g->second.begin()) continue;            // no earlier seq was acked
    --it;
    const auto [ack_sent, earlier_seq] = it->second;
    if (d->at_ns + o.tolerance_ns < ack_sent) {
      out.push_back(p->second->group + ": seq " + std::to_string(p->second->seq) + " handled by " +
                    d->source + " " + as_ms(ack_sent - d->at_ns) + " before the ack of seq " +
                    std::to_string(earlier_seq) + " was sent");
    }
  }
}

}  // namespace

delivery_report check_deliveries(const std::vector<produced_record>& produced,
                                 const std::vector<delivery_record>& deliveries,
                                 const check_options& options) {
  delivery_report r;
  const std::set<std::string> again(options.republished.begin(), options.republished.end());
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
    const auto acks = std::count_if(ds.begin(), ds.end(), [](const auto* d) { return d->acked; });
    if (acks > 0) {
      ++r.acked_ids;
      r.acked.push_back(id);
    }
    // A repeat is what at-least-once allows when a claim ended without its
    // ack: the consumer died, its ack failed, or its window lapsed (then the
    // stale holder may even start handling after the new holder acked — it
    // cannot ack). Two acked deliveries of one id are two claims that were
    // both valid: never allowed, unless a producer inserted the id anew.
    const bool producer_repeat = again.count(id) > 0;
    for (std::size_t i = 1; i < ds.size(); ++i) {
      ++r.duplicates;
      if (acks <= 1 || producer_repeat) ++r.explained_duplicates;
    }
    if (producer_repeat) continue;  // a new row: its counts and windows start again
    if (acks > 1) {
      std::string where;
      for (const auto* d : ds) {
        if (d->acked) where += (where.empty() ? "" : ", ") + d->source;
      }
      r.unexplained.push_back(id + " (acked " + std::to_string(acks) + " times: " + where + ")");
    }
    find_double_claims(id, ds, options, r.double_claims);
  }
  // Lost: committed by a producer and never handled. (A handled message that
  // is gone from the queue was acked by someone: only an ack deletes it. An
  // ack whose log line a SIGKILL cut off is therefore not a loss;
  // check_final_state and the suites check the table.)
  for (const auto& [id, p] : by_id) {
    if (!per_id.count(id)) r.lost.push_back(id);
  }

  if (options.group_order) {
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
  if (options.strict_group_order) find_strict_order_violations(by_id, in_time, options, r.order_violations);
  return r;
}

void check_final_state(delivery_report& report, const std::vector<produced_record>& produced,
                       const std::map<std::string, std::string>& states, const std::string& done_state,
                       bool every_produced) {
  std::set<std::string> want(report.acked.begin(), report.acked.end());
  if (every_produced) {
    for (const auto& p : produced) want.insert(p.id);
  }
  for (const auto& id : want) {
    const auto it = states.find(id);
    if (done_state.empty()) {
      if (it != states.end()) report.final_state.push_back(id + " (acked, still stored: " + it->second + ")");
    } else if (it == states.end()) {
      report.final_state.push_back(id + " (no row; want " + done_state + ")");
    } else if (it->second != done_state) {
      report.final_state.push_back(id + " (" + it->second + "; want " + done_state + ")");
    }
  }
}

std::vector<produced_record> resequenced(
    const std::vector<produced_record>& produced,
    const std::map<std::string, std::pair<std::string, std::int64_t>>& rank) {
  std::vector<produced_record> out = produced;
  for (auto& p : out) {
    const auto it = rank.find(p.id);
    if (it == rank.end()) continue;
    p.group = it->second.first;
    p.seq = it->second.second;
  }
  return out;
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

namespace {

// Reads one log file's lines into the records. A line is one record; a
// process SIGKILLed inside its write(2) can leave the front of a line with no
// newline (the kernel copies a write that crosses a page boundary page by
// page and stops at a fatal signal), and the next line appended to the file
// then continues it. Such a merged line holds a whole record at its end, which
// is kept: dropping it would report its message lost.
class log_reader {
 public:
  log_reader(std::string source, std::vector<produced_record>& produced,
             std::vector<delivery_record>& deliveries, std::vector<std::string>* republished)
      : source_(std::move(source)), produced_(produced), deliveries_(deliveries), republished_(republished) {}

  void line(const std::string& l) {
    if (record(fields(l))) return;
    for (std::size_t i = 1; i + 1 < l.size(); ++i) {  // the longest whole record at the end
      if (l[i + 1] == '\t' && std::string_view("PHAR").find(l[i]) != std::string_view::npos &&
          record(fields(l.substr(i)))) {
        return;
      }
    }
  }

 private:
  // Takes a record of a known shape and says whether it was one.
  bool record(const std::vector<std::string>& f) {
    std::int64_t a = 0, b = 0;
    if (f.size() == 4 && f[0] == "P" && to_int(f[3], a)) {
      produced_.push_back({f[1], f[2], a});
      return true;
    }
    if ((f.size() == 4 || f.size() == 6) && f[0] == "H" && to_int(f[2], a) && to_int(f[3], b)) {
      delivery_record d{f[1], a, b, false, source_};
      if (f.size() == 6 && !(to_int(f[4], d.asked_ns) && to_int(f[5], d.window_ns))) return false;
      open_[f[1]] = deliveries_.size();
      deliveries_.push_back(std::move(d));
      return true;
    }
    if (f.size() == 2 && f[0] == "R") {
      if (republished_ != nullptr) republished_->push_back(f[1]);
      return true;
    }
    if ((f.size() == 3 || f.size() == 4) && f[0] == "A" && to_int(f[2], a)) {
      const auto it = open_.find(f[1]);
      if (it != open_.end()) {
        deliveries_[it->second].acked = true;
        if (f.size() == 4 && to_int(f[3], b)) deliveries_[it->second].ack_started_ns = b;
        open_.erase(it);
      }
      return true;
    }
    return false;
  }

  std::string source_;
  std::vector<produced_record>& produced_;
  std::vector<delivery_record>& deliveries_;
  std::vector<std::string>* republished_;
  std::map<std::string, std::size_t> open_;  // id → index of its last H in this file
};

}  // namespace

void read_logs(const std::filesystem::path& dir, const std::string& prefix,
               std::vector<produced_record>& produced, std::vector<delivery_record>& deliveries,
               std::vector<std::string>* republished) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".log") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    log_reader reader(name, produced, deliveries, republished);
    for (std::size_t start = 0;;) {
      const auto nl = all.find('\n', start);
      if (nl == std::string::npos) break;  // a torn last line: ignored
      reader.line(all.substr(start, nl - start));
      start = nl + 1;
    }
  }
}

log_writer::log_writer(const std::filesystem::path& file) {
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + file.string());
  drop_torn_tail();
}

// A predecessor killed inside a write may have left the front of a line with
// no newline; cut it off, so that this writer's first line starts a line of
// its own instead of continuing that one.
void log_writer::drop_torn_tail() {
  off_t end = ::lseek(fd_, 0, SEEK_END);
  if (end < 0) throw std::system_error(errno, std::generic_category(), "seek log");
  char buf[4096];
  for (off_t keep = end; keep > 0;) {
    const off_t from = std::max<off_t>(0, keep - static_cast<off_t>(sizeof buf));
    const ssize_t n = ::pread(fd_, buf, static_cast<std::size_t>(keep - from), from);
    if (n != keep - from) throw std::system_error(errno, std::generic_category(), "read log");
    for (ssize_t i = n; i > 0; --i) {
      if (buf[i - 1] == '\n') {
        if (from + i != end && ::ftruncate(fd_, from + i) != 0)
          throw std::system_error(errno, std::generic_category(), "truncate log");
        return;
      }
    }
    keep = from;
  }
  if (end > 0 && ::ftruncate(fd_, 0) != 0)
    throw std::system_error(errno, std::generic_category(), "truncate log");
}

log_writer::~log_writer() {
  if (fd_ >= 0) ::close(fd_);
}

void log_writer::line(const std::string& text) {
  const std::string l = text + "\n";
  const ssize_t n = ::write(fd_, l.data(), l.size());
  if (n != static_cast<ssize_t>(l.size()))
    throw std::system_error(errno, std::generic_category(), "write log line");
}

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace spool::test
