#include "spool/database.hpp"

#include <fmt/format.h>

#include "engine/database_impl.hpp"
#include "spool/error.hpp"

namespace spool {

namespace detail {

database_impl::database_impl(engine kind, std::string target, std::string display, database_options options)
    : kind_(kind), target_(std::move(target)), display_(std::move(display)), options_(options) {
  if (kind_ == engine::postgres) {
    pg_pool_ = std::make_unique<pool<pg::detail::connection>>(
        options_.pool_size, [this] { return pg_connect(static_cast<int>(options_.connect_timeout.count())); },
        [](pg::detail::connection& c) { return c.healthy() && !c.in_transaction(); });
  } else {
    sqlite_pool_ = std::make_unique<pool<sqlite::detail::connection>>(
        options_.pool_size,
        [this] {
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

std::unique_ptr<pg::detail::connection> database_impl::pg_connect(int connect_timeout_s) const {
  return std::make_unique<pg::detail::connection>(target_, display_, connect_timeout_s);
}

void database_impl::listen(const std::string& channel) {
  if (kind_ != engine::postgres) return;
  std::lock_guard lock(listener_mutex_);
  if (!listener_) {
    listener_ = std::make_unique<pg::detail::notifier>(
        [this] { return pg_connect(static_cast<int>(options_.connect_timeout.count())); },
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
const std::string& database::display_name() const noexcept { return impl_->display(); }

std::vector<row> database::exec(std::string_view sql, const std::vector<param>& params) {
  if (impl_->kind() == engine::postgres) {
    auto conn = impl_->pg_pool().acquire();
    return conn->query(sql, params, pg::detail::intent::write);
  }
  auto conn = impl_->sqlite_pool().acquire();
  return conn->query(sql, params);
}

std::string redact_password(std::string_view s) {
  std::string out(s);
  // URI form: scheme://user:password@host → scheme://user:***@host
  if (auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto auth_start = scheme + 3;
    const auto at = out.find('@', auth_start);
    const auto slash = out.find('/', auth_start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const auto colon = out.find(':', auth_start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // Query parameter or key/value form: password=secret
  for (std::size_t pos = 0; (pos = out.find("password=", pos)) != std::string::npos;) {
    const bool boundary = pos == 0 || out[pos - 1] == ' ' || out[pos - 1] == '?' || out[pos - 1] == '&';
    const auto start = pos + 9;
    if (!boundary) {
      pos = start;
      continue;
    }
    std::size_t end = start;
    if (end < out.size() && out[end] == '\'') {
      end = out.find('\'', end + 1);
      end = end == std::string::npos ? out.size() : end + 1;
    } else {
      while (end < out.size() && out[end] != ' ' && out[end] != '&') ++end;
    }
    out.replace(start, end - start, "***");
    pos = start + 3;
  }
  return out;
}

}  // namespace spool
