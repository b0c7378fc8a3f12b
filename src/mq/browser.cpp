// The operator's read of the message queue (spool/mq/browser.hpp) over the
// SQL of sql/<engine>/mq/browse/: one statement per view, the same on both
// engines but for dialect. Times are the client's clock in unix seconds, as
// the legacy rows store them.
#include "spool/mq/browser.hpp"

#include <fmt/format.h>

#include <limits>
#include <map>

#include "common/embedded_sql.hpp"
#include "common/identifier.hpp"
#include "common/text/sql_template.hpp"
#include "spool/error.hpp"

namespace spool::mq {

namespace {

constexpr std::size_t max_filter_bytes = 1000;
constexpr std::size_t max_limit = 500;

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t to_i64(const std::optional<std::string>& v) { return v ? std::stoll(*v) : 0; }

std::optional<std::int64_t> to_opt(const std::optional<std::string>& v) {
  if (!v) return std::nullopt;
  return std::stoll(*v);
}

// PostgreSQL prints a boolean as t/f, SQLite as 1/0.
bool to_bool(const std::optional<std::string>& v) { return v && (*v == "t" || *v == "1" || *v == "true"); }

void check_text(std::string_view what, std::string_view value) {
  if (value.size() > max_filter_bytes) {
    throw error(errc::invalid_argument, fmt::format("{} is over {} bytes", what, max_filter_bytes),
                "filter_too_long");
  }
}

void check_queue(std::string_view queue) {
  if (queue.empty()) throw error(errc::invalid_argument, "a queue name is required", "queue_required");
  check_text("the queue name", queue);
}

void check_limit(std::size_t limit) {
  if (limit == 0 || limit > max_limit) {
    throw error(errc::invalid_argument, fmt::format("limit must be 1..{}", max_limit), "invalid_limit");
  }
}

message_view message_of(std::string_view queue, const row& r, std::int64_t now) {
  message_view m;
  m.queue = std::string(queue);
  m.id = r.at(0).value_or("");
  m.group = r.at(1);
  m.visible_at = to_i64(r.at(3));
  m.state = to_bool(r.at(2))     ? row_state::in_flight
            : m.visible_at > now ? row_state::delayed
                                 : row_state::visible;
  m.created_at = to_i64(r.at(4));
  m.receive_count = to_i64(r.at(5));
  m.payload = r.at(6).value_or("");
  m.payload_bytes = to_i64(r.at(7));
  if (r.size() > 8) m.receipt = r.at(8);
  return m;
}

quarantined_view quarantined_of(std::string_view queue, const row& r) {
  quarantined_view q;
  q.queue = std::string(queue);
  q.id = r.at(0).value_or("");
  q.group = r.at(1);
  q.payload = r.at(2).value_or("");
  q.error_message = r.at(3).value_or("");
  q.receive_count = to_opt(r.at(4));
  q.created_at = to_opt(r.at(5));
  q.failed_at = to_i64(r.at(6));
  q.payload_bytes = to_i64(r.at(7));
  return q;
}

}  // namespace

std::string_view to_string(row_state s) noexcept {
  switch (s) {
    case row_state::visible:
      return "visible";
    case row_state::in_flight:
      return "in_flight";
    case row_state::delayed:
      return "delayed";
    case row_state::any:
      break;
  }
  return "any";
}

row_state parse_row_state(std::string_view text) {
  if (text.empty() || text == "any") return row_state::any;
  if (text == "visible") return row_state::visible;
  if (text == "in_flight") return row_state::in_flight;
  if (text == "delayed") return row_state::delayed;
  throw error(errc::invalid_argument, "state must be any, visible, in_flight or delayed",
              "invalid_state_filter");
}

browser::browser(database db, std::string schema) : db_(std::move(db)), schema_(std::move(schema)) {
  if (!schema_.empty()) spool::detail::validate_identifier("schema", schema_);
}

std::string browser::sql(std::string_view file) const {
  return spool::detail::fill_placeholders(std::string(spool::detail::embedded_sql(fmt::format(
                                              "{}/mq/browse/{}.sql", engine_name(db_.kind()), file))),
                                          {{"{{s}}", spool::detail::schema_prefix(schema_)}});
}

std::vector<queue_overview> browser::queues() {
  std::map<std::string, queue_overview> by_name;
  for (const auto& r : db_.exec(sql("queues"), {now_s()})) {
    auto& q = by_name[r.at(0).value_or("")];
    q.queue = r.at(0).value_or("");
    q.visible = to_i64(r.at(1));
    q.in_flight = to_i64(r.at(2));
    q.delayed = to_i64(r.at(3));
    q.oldest_waiting_created_at = to_opt(r.at(4));
  }
  for (const auto& r : db_.exec(sql("failed_counts"))) {
    auto& q = by_name[r.at(0).value_or("")];
    q.queue = r.at(0).value_or("");
    q.quarantined = to_i64(r.at(1));
  }
  std::vector<queue_overview> out;
  out.reserve(by_name.size());
  for (auto& [name, q] : by_name) out.push_back(std::move(q));
  return out;
}

std::vector<arrivals> browser::created_since(std::int64_t since) {
  std::vector<arrivals> out;
  for (const auto& r : db_.exec(sql("recent"), {since})) {
    out.push_back({r.at(0).value_or(""), to_i64(r.at(1)), to_i64(r.at(2))});
  }
  return out;
}

message_page browser::messages(const message_filter& f) {
  check_queue(f.queue);
  check_limit(f.limit);
  check_text("the cursor", f.after);
  check_text("the id prefix", f.id_prefix);
  if (f.group) check_text("the group", *f.group);
  if (f.min_age && f.min_age->count() < 0) {
    throw error(errc::invalid_argument, "the minimum age must not be negative", "invalid_age");
  }
  const auto now = now_s();
  const std::int64_t created_before =
      f.min_age ? now - f.min_age->count() : std::numeric_limits<std::int64_t>::max();
  const spool::param group = f.group ? spool::param(*f.group) : spool::param(nullptr);
  const auto rows =
      db_.exec(sql("messages"),
               {f.queue, f.after, group, std::string(f.state == row_state::any ? "" : to_string(f.state)),
                f.id_prefix, created_before, static_cast<std::int64_t>(f.limit + 1), now});
  // One row past the page tells whether another page follows.
  message_page page;
  page.messages.reserve(rows.size());
  for (const auto& r : rows) {
    if (page.messages.size() == f.limit) {
      page.next = page.messages.back().id;
      break;
    }
    page.messages.push_back(message_of(f.queue, r, now));
  }
  return page;
}

std::optional<message_view> browser::message(std::string_view queue, std::string_view id) {
  check_queue(queue);
  check_text("the id", id);
  const auto rows = db_.exec(sql("message"), {std::string(queue), std::string(id)});
  if (rows.empty()) return std::nullopt;
  return message_of(queue, rows.front(), now_s());
}

quarantine_page browser::quarantined(std::string_view queue, std::string_view after, std::size_t limit) {
  quarantine_filter f;
  f.queue = std::string(queue);
  f.after = std::string(after);
  f.limit = limit;
  return quarantined(f);
}

quarantine_page browser::quarantined(const quarantine_filter& f) {
  check_queue(f.queue);
  check_limit(f.limit);
  check_text("the cursor", f.after);
  check_text("the id prefix", f.id_prefix);
  check_text("the reason", f.reason_contains);
  if (f.group) check_text("the group", *f.group);
  const auto rows = db_.exec(sql("failed_page"), {f.queue, f.after, static_cast<std::int64_t>(f.limit + 1),
                                                  f.group ? spool::param(*f.group) : spool::param(nullptr),
                                                  f.id_prefix, f.reason_contains});
  quarantine_page page;
  page.rows.reserve(rows.size());
  for (const auto& r : rows) {
    if (page.rows.size() == f.limit) {
      page.next = page.rows.back().id;
      break;
    }
    page.rows.push_back(quarantined_of(f.queue, r));
  }
  return page;
}

std::optional<quarantined_view> browser::quarantined_message(std::string_view queue, std::string_view id) {
  check_queue(queue);
  check_text("the id", id);
  const auto rows = db_.exec(sql("failed_one"), {std::string(queue), std::string(id)});
  if (rows.empty()) return std::nullopt;
  return quarantined_of(queue, rows.front());
}

}  // namespace spool::mq
