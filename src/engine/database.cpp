#include "spool/database.hpp"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <vector>

#include "engine/database_impl.hpp"
#include "spool/error.hpp"

namespace spool {

namespace detail {

database_impl::database_impl(engine kind, std::string target, std::string display, database_options options)
    : kind_(kind), target_(std::move(target)), display_(std::move(display)), options_(options) {
  if (kind_ == engine::postgres) {
    pg_pool_ = std::make_unique<pool<pg::detail::connection>>(
        options_.pool_size, [this](const call_options& limits) { return pg_connect(limits); },
        [](pg::detail::connection& c) {
          return c.healthy() && !c.in_transaction() && !c.cancel_outstanding();
        });
  } else {
    sqlite_pool_ = std::make_unique<pool<sqlite::detail::connection>>(
        options_.pool_size,
        [this](const call_options&) {
          return std::make_unique<sqlite::detail::connection>(target_, options_.sqlite_busy_timeout,
                                                              options_.sqlite_sync, sqlite_write_gate_);
        },
        [](sqlite::detail::connection& c) { return !c.in_transaction(); });
  }
}

pool<pg::detail::connection>& database_impl::pg_pool() {
  if (!pg_pool_)
    throw error(errc::invalid_argument, fmt::format("{} is not a PostgreSQL database", display_));
  return *pg_pool_;
}

pool<sqlite::detail::connection>& database_impl::sqlite_pool() {
  if (!sqlite_pool_)
    throw error(errc::invalid_argument, fmt::format("{} is not a SQLite database", display_));
  return *sqlite_pool_;
}

}  // namespace detail

std::string_view engine_name(engine e) noexcept { return e == engine::postgres ? "postgres" : "sqlite"; }

namespace detail {

void database_impl::clear_idle() {
  if (pg_pool_) pg_pool_->clear_idle();
  if (sqlite_pool_) sqlite_pool_->clear_idle();
}

std::size_t database_impl::prefill(std::size_t n) noexcept {
  if (pg_pool_) return pg_pool_->prefill(n);
  if (sqlite_pool_) return sqlite_pool_->prefill(n);
  return 0;
}

std::unique_ptr<pg::detail::connection> database_impl::pg_connect(const call_options& limits) const {
  // libpq's connect_timeout is whole seconds, at least 2: a call with a
  // deadline waits for a server that does not answer (a stopped postmaster,
  // a partition) until about its deadline, never the whole connect_timeout.
  auto timeout = std::chrono::duration_cast<std::chrono::seconds>(options_.connect_timeout).count();
  if (limits.deadline) {
    const auto left =
        std::chrono::ceil<std::chrono::seconds>(*limits.deadline - std::chrono::steady_clock::now());
    timeout = std::clamp<std::int64_t>(left.count(), 2, std::max<std::int64_t>(timeout, 2));
  }
  return pg_connect(static_cast<int>(timeout));
}

std::unique_ptr<pg::detail::connection> database_impl::pg_connect(int connect_timeout_s) const {
  return std::make_unique<pg::detail::connection>(target_, display_, connect_timeout_s);
}

void database_impl::listen(const std::string& channel) {
  if (kind_ != engine::postgres) return;
  std::lock_guard lock(listener_mutex_);
  if (!listener_) {
    listener_ = std::make_unique<pg::detail::notifier>([this] { return pg_connect({}); },
                                                       [this](const pg::detail::notifier::event* e) {
                                                         wake_.raise();
                                                         std::lock_guard subs(subscribers_mutex_);
                                                         for (const auto& [id, sub] : subscribers_) {
                                                           if (e == nullptr) {
                                                             sub.second(nullptr);
                                                           } else if (sub.first == e->channel) {
                                                             sub.second(&e->payload);
                                                           }
                                                         }
                                                       });
  }
  listener_->listen(channel);
}

listener_info database_impl::listener() noexcept {
  std::lock_guard lock(listener_mutex_);
  if (!listener_) return {};
  return {.active = true, .connected = listener_->connected(), .reconnects = listener_->reconnects()};
}

std::shared_ptr<void> database_impl::subscribe(const std::string& channel, subscriber fn) {
  if (kind_ != engine::postgres) return {};
  std::uint64_t id = 0;
  {
    std::lock_guard lock(subscribers_mutex_);
    id = next_subscriber_++;
    subscribers_.emplace(id, std::make_pair(channel, std::move(fn)));
  }
  listen(channel);
  // The database outlives every driver that subscribes (each holds it).
  struct unsubscribe {
    unsubscribe(database_impl* d, std::uint64_t i) : db(d), id(i) {}  // clang 14: no aggregate make_shared
    database_impl* db;
    std::uint64_t id;
    ~unsubscribe() {
      std::lock_guard lock(db->subscribers_mutex_);
      db->subscribers_.erase(id);
    }
  };
  return std::make_shared<unsubscribe>(this, id);  // no temporary: its destructor would unsubscribe
}

}  // namespace detail

namespace {

bool has_prefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

void check_options(const database_options& o, const std::string& display) {
  if (o.pool_size == 0)
    throw error(errc::invalid_argument, fmt::format("pool_size must be at least 1 for {}", display));
}

}  // namespace

database database::open(std::string_view uri, database_options options) {
  const std::string display = redact_password(uri);
  if (has_prefix(uri, "postgres://") || has_prefix(uri, "postgresql://")) {
    check_options(options, display);
    return database(
        std::make_shared<detail::database_impl>(engine::postgres, std::string(uri), display, options));
  }
  if (has_prefix(uri, "sqlite:")) {
    const std::string_view path = uri.substr(7);
    if (path.empty()) throw error(errc::invalid_argument, "sqlite URI has an empty path: \"sqlite:\"");
    if (has_prefix(path, "//")) {
      throw error(
          errc::invalid_argument,
          fmt::format("unsupported SQLite URI \"{}\": write sqlite:PATH (e.g. sqlite:/var/lib/app/q.db)",
                      display));
    }
    if (path == ":memory:") {
      throw error(errc::invalid_argument,
                  "sqlite::memory: is not supported: each pooled connection would see its own database");
    }
    check_options(options, display);
    return database(
        std::make_shared<detail::database_impl>(engine::sqlite, std::string(path), display, options));
  }
  if (uri.empty()) throw error(errc::invalid_argument, "empty database URI");
  const auto colon = uri.find(':');
  if (colon == std::string_view::npos) {
    throw error(
        errc::invalid_argument,
        fmt::format("invalid database URI \"{}\": expected postgres://…, postgresql://… or sqlite:PATH",
                    display));
  }
  throw error(errc::invalid_argument, fmt::format("no engine registered for scheme \"{}\" in \"{}\"",
                                                  redact_password(uri.substr(0, colon)), display));
}

database database::open_postgres(std::string_view conninfo, database_options options) {
  const std::string display = redact_password(conninfo);
  check_options(options, display);
  return database(
      std::make_shared<detail::database_impl>(engine::postgres, std::string(conninfo), display, options));
}

engine database::kind() const noexcept { return impl_->kind(); }
listener_info database::listener() const noexcept { return impl_->listener(); }
const std::string& database::display_name() const noexcept { return impl_->display(); }

std::vector<row> database::exec(std::string_view sql, const std::vector<param>& params) {
  if (impl_->kind() == engine::postgres) {
    auto conn = impl_->pg_pool().acquire();
    return conn->query(sql, params, pg::detail::intent::write);
  }
  auto conn = impl_->sqlite_pool().acquire();
  return conn->query(sql, params);
}

namespace {

// What redact_password masks: a value libpq reads as a secret, by byte range.
struct secret_span {
  std::size_t begin;
  std::size_t end;
  bool quoted;  // a conninfo '…' value: masked as '***' so the next key still parses
};

bool is_secret_key(std::string_view key) { return key == "password" || key == "sslpassword"; }

// libpq separates conninfo pairs with isspace() in the C locale.
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// URI query keys are percent-decoded by libpq (pass%77ord is password).
std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The end of a conninfo value starting at pos, as libpq reads it: '…' with
// backslash escapes (to the end when unterminated), else up to whitespace
// with backslash escapes. stop_at_amp also ends a bare value at '&' (the
// query-string heuristic).
std::size_t conninfo_value_end(std::string_view s, std::size_t pos, bool stop_at_amp) {
  if (pos < s.size() && s[pos] == '\'') {
    for (++pos; pos < s.size(); ++pos) {
      if (s[pos] == '\\') {
        ++pos;
      } else if (s[pos] == '\'') {
        return pos + 1;
      }
    }
    return s.size();
  }
  while (pos < s.size() && !is_space(s[pos]) && !(stop_at_amp && s[pos] == '&'))
    pos += s[pos] == '\\' ? 2 : 1;
  return std::min(pos, s.size());
}

// A URI's user:password@ and its password / sslpassword query parameters.
// whole: s is the URI libpq parses (its query runs to the end); else a URI
// inside free text (it ends at whitespace).
void uri_secrets(std::string_view s, std::size_t scheme_end, bool whole, std::vector<secret_span>& out) {
  const std::size_t auth = scheme_end + 3;
  std::size_t end = s.size();
  if (!whole) end = std::min(s.find_first_of(" \t\n\r\f\v", auth), s.size());
  std::size_t host = auth;
  // libpq: user info is everything up to the first '@' that comes before any '/'.
  const std::size_t stop = s.find_first_of("@/", auth);
  if (stop < end && s[stop] == '@') {
    const std::size_t colon = s.find(':', auth);
    if (colon < stop) out.push_back({colon + 1, stop, false});
    host = stop + 1;
  }
  const std::size_t query = s.find('?', host);
  if (query >= end) return;
  for (std::size_t pos = query + 1; pos < end;) {
    const std::size_t amp = std::min(s.find('&', pos), end);
    const std::size_t eq = s.find('=', pos);
    if (eq < amp && is_secret_key(percent_decode(s.substr(pos, eq - pos))))
      out.push_back({eq + 1, amp, false});
    pos = amp + 1;
  }
}

// The password / sslpassword values of a key/value conninfo, read as libpq
// reads it; returns where libpq stops parsing (s.size() when it reads all).
std::size_t conninfo_secrets(std::string_view s, std::vector<secret_span>& out) {
  std::size_t pos = 0;
  auto skip_space = [&] {
    while (pos < s.size() && is_space(s[pos])) ++pos;
  };
  while (true) {
    skip_space();
    if (pos >= s.size()) return pos;
    const std::size_t key_begin = pos;
    while (pos < s.size() && s[pos] != '=' && !is_space(s[pos])) ++pos;
    const std::string_view key = s.substr(key_begin, pos - key_begin);
    skip_space();
    if (pos >= s.size() || s[pos] != '=') return key_begin;  // libpq rejects the rest
    ++pos;
    skip_space();
    const std::size_t value_end = conninfo_value_end(s, pos, false);
    if (is_secret_key(key)) out.push_back({pos, value_end, pos < s.size() && s[pos] == '\''});
    pos = value_end;
  }
}

// In free text (libpq messages, what libpq would not parse) from `from` on:
// password=… and sslpassword=… after a start, whitespace, '?' or '&'. Not
// inside a value already found (a URI's query value may hold "&password=").
void loose_secrets(std::string_view s, std::size_t from, std::vector<secret_span>& out) {
  const std::size_t found = out.size();
  auto inside_found = [&](std::size_t pos) {
    for (std::size_t i = 0; i < found; ++i) {
      if (pos >= out[i].begin && pos <= out[i].end) return true;
    }
    return false;
  };
  for (std::string_view key : {"password=", "sslpassword="}) {
    for (std::size_t pos = from; (pos = s.find(key, pos)) != std::string_view::npos;) {
      const bool boundary = pos == 0 || is_space(s[pos - 1]) || s[pos - 1] == '?' || s[pos - 1] == '&';
      const bool in_value = inside_found(pos);
      pos += key.size();
      if (!boundary || in_value) continue;
      std::size_t start = pos;
      while (start < s.size() && is_space(s[start])) ++start;  // libpq skips blanks after '='
      const std::size_t end = conninfo_value_end(s, start, true);
      out.push_back({start, end, start < s.size() && s[start] == '\''});
    }
  }
}

// True when libpq, reading text as a connection string (PQconninfoParse:
// no connection, no defaults), finds a password or sslpassword that is not
// empty or ***. libpq reads up to a NUL, as it would when connecting.
bool libpq_reads_a_secret(const std::string& text) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(text.c_str(), &err);
  if (err != nullptr) PQfreemem(err);
  if (opts == nullptr) return false;
  bool secret = false;
  for (const PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    const std::string_view key = o->keyword;
    if (is_secret_key(key) && o->val != nullptr && *o->val != '\0' && std::string_view(o->val) != "***")
      secret = true;
  }
  PQconninfoFree(opts);
  return secret;
}

std::string mask_spans(std::string_view s, std::vector<secret_span> spans);

}  // namespace

std::string redact_password(std::string_view s) {
  std::vector<secret_span> spans;
  // What libpq reads (a URI whole, a conninfo up to where it stops parsing)
  // is masked as libpq reads it; the rest is free text (a libpq message, a
  // mistyped string), masked by pattern. Patterns never reach into what
  // libpq reads: a masked value must stay one value.
  std::size_t parsed = 0;
  const bool uri = has_prefix(s, "postgresql://") || has_prefix(s, "postgres://");
  if (uri) {
    uri_secrets(s, s.find("://"), true, spans);
    parsed = s.size();
  } else {
    parsed = conninfo_secrets(s, spans);
  }
  for (std::size_t pos = parsed; (pos = s.find("://", pos)) != std::string_view::npos; pos += 3) {
    uri_secrets(s, pos, false, spans);
  }
  loose_secrets(s, parsed, spans);
  std::string out = mask_spans(s, std::move(spans));
  // libpq has the last word: when the masking reshaped the text so that it
  // now reads a secret (a mangled URI whose masked value held a '/' or '@'),
  // show nothing after the scheme.
  if (libpq_reads_a_secret(out)) out = uri ? std::string(s.substr(0, s.find("://") + 3)) + "***" : "***";
  return out;
}

namespace {

std::string mask_spans(std::string_view s, std::vector<secret_span> spans) {
  if (spans.empty()) return std::string(s);

  // Overlapping finds (a conninfo value is also a loose one) mask once.
  std::sort(spans.begin(), spans.end(), [](const secret_span& a, const secret_span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  std::string out;
  std::size_t copied = 0;
  for (std::size_t i = 0; i < spans.size();) {
    secret_span merged = spans[i];
    // An empty find right at the end of a mask is inside it, not a second mask.
    for (++i; i < spans.size() && (spans[i].begin < merged.end ||
                                   (spans[i].begin == merged.end && spans[i].end == spans[i].begin));
         ++i) {
      if (spans[i].end > merged.end) {
        merged.end = spans[i].end;
        merged.quoted = false;
      }
    }
    out.append(s.substr(copied, merged.begin - copied));
    out += merged.quoted ? "'***'" : "***";
    copied = merged.end;
  }
  out.append(s.substr(copied));
  return out;
}

}  // namespace

}  // namespace spool
