// The console's router: static files, the session and login, and the API,
// with the checks every API call passes before it runs (session, CSRF token,
// same origin, read-only mode) and one mapping of errors to HTTP statuses.
#include "serve/console/site.hpp"

#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "serve/console/api.hpp"
#include "serve/console/assets.hpp"
#include "serve/console/sampler.hpp"
#include "serve/console/sessions.hpp"
#include "spool/error.hpp"
#include "spool/mq/browser.hpp"
#include "spool/ops/queue.hpp"
#include "spool/outbox/store.hpp"

namespace spool::serve::console {

namespace {

constexpr std::size_t max_action_body = 64 * 1024;
constexpr std::string_view api_prefix = "/console/api/";

http_response json_response(int status, const nlohmann::json& body) {
  return {status,
          "application/json",
          body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
          {{"Cache-Control", "no-store"}}};
}

http_response error_response(int status, std::string_view code, std::string_view message) {
  return json_response(status, {{"error", code}, {"message", message}});
}

int status_of(errc code) {
  switch (code) {
    case errc::invalid_argument:
      return 400;
    case errc::not_found:
      return 404;
    case errc::unauthorized:
      return 403;
    case errc::already_exists:
    case errc::duplicate:
    case errc::conflict:
    case errc::invalid_state:
    case errc::lease_lost:
      return 409;
    case errc::unavailable:
    case errc::stopped:
      return 503;
    default:
      return 500;
  }
}

// The host[:port] of an Origin header ("http://host:port").
std::string origin_host(const std::string& origin) {
  const auto at = origin.find("://");
  return at == std::string::npos ? origin : origin.substr(at + 3);
}

}  // namespace

struct site::impl {
  site_options opts;
  api_context ctx;
  session_store sessions;
  // The overview scans every queue's rows: browsers that refresh it every two
  // seconds share one answer per second, and an action drops it.
  static constexpr std::chrono::milliseconds overview_ttl{1000};
  std::mutex overview_mu;
  std::optional<std::pair<std::chrono::steady_clock::time_point, nlohmann::json>> overview_cache;
  std::unique_ptr<mq_sampler> sampler;  // after ctx: it reads through ctx.mq

  nlohmann::json cached_overview() {
    std::lock_guard lock(overview_mu);
    const auto now = std::chrono::steady_clock::now();
    if (!overview_cache || now - overview_cache->first >= overview_ttl) {
      overview_cache.emplace(now, overview(ctx));
    }
    return overview_cache->second;
  }

  void forget_overview() {
    std::lock_guard lock(overview_mu);
    overview_cache.reset();
  }

  impl(database db, site_options o) : opts(std::move(o)), ctx{db, opts.schema, {}, {}, {}, {}, {}} {
    ctx.mq = std::make_unique<mq::browser>(ctx.db, opts.schema);
    try {
      ops::queue_options o;
      o.schema = opts.schema;
      o.table = opts.ops_table;
      ctx.ops = std::make_unique<ops::queue>(ctx.db, std::move(o));
    } catch (const spool::error& e) {
      if (e.code() == errc::invalid_argument) throw;
      ctx.ops_missing = fmt::format("the op queue {} is not available: {}", opts.ops_table, e.what());
    }
    try {
      outbox::store_options o;
      o.config.schema = opts.schema;
      o.config.table = opts.outbox_table;
      ctx.outbox = std::make_unique<outbox::store>(ctx.db, std::move(o));
    } catch (const spool::error& e) {
      if (e.code() == errc::invalid_argument) throw;
      ctx.outbox_missing = fmt::format("the outbox {} is not available: {}", opts.outbox_table, e.what());
    }
    sampler = std::make_unique<mq_sampler>(*ctx.mq, opts.sample_interval);
  }

  http_response asset_response(std::string_view path) {
    if (path.empty() || path == "/") path = "index.html";
    if (path.front() == '/') path.remove_prefix(1);
    const auto* a = find_asset(path);
    if (a == nullptr) return error_response(404, "not_found", "no such page");
    return {200,
            std::string(a->content_type),
            std::string(a->body),
            {{"Cache-Control", "no-cache"},
             {"X-Content-Type-Options", "nosniff"},
             {"X-Frame-Options", "DENY"},
             {"Content-Security-Policy",
              "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
              "connect-src 'self'; frame-ancestors 'none'; form-action 'self'"}}};
  }

  nlohmann::json session_json(const session& s) const {
    return {{"authenticated", true},
            {"user", s.user},
            {"csrf", s.csrf},
            {"read_only", opts.read_only},
            {"login_required", !opts.token.empty()},
            {"engine", std::string(engine_name(ctx.db.kind()))}};
  }

  http_response with_cookie(http_response res, const session& s, bool tls) {
    res.headers.emplace_back("Set-Cookie", session_store::set_cookie(s.id, tls));
    return res;
  }

  // GET session: who is logged in. Without a token, a visitor gets a session at once.
  http_response get_session(const http_request& r) {
    if (auto s = sessions.find(r.header("cookie"))) return json_response(200, session_json(*s));
    if (!opts.token.empty()) {
      return json_response(200, {{"authenticated", false}, {"login_required", true}});
    }
    const auto s = sessions.open("console");
    return with_cookie(json_response(200, session_json(s)), s, r.tls);
  }

  http_response login(const http_request& r) {
    const auto body = nlohmann::json::parse(r.body, nullptr, false);
    if (!body.is_object()) return error_response(400, "malformed_body", "the body must be a JSON object");
    const auto token = text_member(body, "token", false, 4096);
    auto user = text_member(body, "user", false, 64);
    if (!opts.token.empty() && !equal_secret(token, opts.token)) {
      return error_response(401, "login_failed", "wrong token");
    }
    for (const char c : user) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
        return error_response(400, "invalid_user", "the user name holds a control character");
      }
    }
    const auto s = sessions.open(user.empty() ? "console" : "console:" + user);
    return with_cookie(json_response(200, session_json(s)), s, r.tls);
  }

  http_response api(const http_request& r, std::string_view route) {
    if (route == "session" && r.method == "GET") return get_session(r);
    if (route == "login" && r.method == "POST") return login(r);
    const auto s = sessions.find(r.header("cookie"));
    if (!s) return error_response(401, "login_required", "log in to the console first");
    if (route == "logout" && r.method == "POST") {
      sessions.close(r.header("cookie"));
      auto res = json_response(200, {{"authenticated", false}});
      res.headers.emplace_back("Set-Cookie", session_store::clear_cookie(r.tls));
      return res;
    }
    const auto slash = route.find('/');
    const auto capability = route.substr(0, slash);
    const auto rest = slash == std::string_view::npos ? std::string_view() : route.substr(slash + 1);
    if (r.method == "GET") {
      if (route == "overview") return json_response(200, cached_overview());
      if (route == "throughput") return json_response(200, throughput(ctx, *sampler));
      if (capability == "mq") return json_response(200, mq_read(ctx, rest, r));
      if (capability == "ops") return json_response(200, ops_read(ctx, rest, r));
      if (capability == "outbox") return json_response(200, outbox_read(ctx, rest, r));
      return error_response(404, "unknown_route", "no such console API");
    }
    if (r.method != "POST") return error_response(405, "method_not_allowed", "GET or POST");
    // Every action: the session's CSRF token, the same origin, and not read-only.
    if (!equal_secret(r.header("x-spool-csrf"), s->csrf)) {
      return error_response(403, "csrf_token_invalid", "the action carries no valid CSRF token");
    }
    if (const auto origin = r.header("origin"); !origin.empty() && origin_host(origin) != r.header("host")) {
      return error_response(403, "cross_origin", "the action comes from another origin");
    }
    if (opts.read_only)
      return error_response(403, "read_only", "the console is read-only (--console-read-only)");
    if (r.body.size() > max_action_body)
      return error_response(413, "body_too_large", "the action body is over 64 KiB");
    const auto body = nlohmann::json::parse(r.body, nullptr, false);
    if (!body.is_object()) return error_response(400, "malformed_body", "the body must be a JSON object");
    const actor who{s->user};
    // The next overview reads the counts the action changed.
    struct forget {
      impl& self;
      ~forget() { self.forget_overview(); }
    } after{*this};
    if (capability == "mq") return json_response(200, mq_action(ctx, rest, body, who));
    if (capability == "ops") return json_response(200, ops_action(ctx, rest, body, who));
    if (capability == "outbox") return json_response(200, outbox_action(ctx, rest, body, who));
    return error_response(404, "unknown_route", "no such console action");
  }
};

site::site(database db, site_options options)
    : impl_(std::make_unique<impl>(std::move(db), std::move(options))) {}

site::~site() = default;

http_response site::handle(const http_request& r) {
  const std::string_view path = r.path;
  if (path == "/console") return {302, "text/plain", "", {{"Location", "/console/"}}};
  try {
    if (path.substr(0, api_prefix.size()) == api_prefix) return impl_->api(r, path.substr(api_prefix.size()));
    if (r.method != "GET") return error_response(405, "method_not_allowed", "pages are read with GET");
    return impl_->asset_response(path.substr(std::string_view("/console").size()));
  } catch (const api_error& e) {
    return error_response(e.status, e.code, e.message);
  } catch (const spool::error& e) {
    return error_response(status_of(e.code()), e.reason().empty() ? to_string(e.code()) : e.reason(),
                          e.what());
  }
}

}  // namespace spool::serve::console
