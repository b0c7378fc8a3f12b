#include "serve/server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>

#include "serve/sigv4.hpp"
#include "spool/error.hpp"

namespace spool::serve {

struct server::impl {
  server_options opts;
  action_handler handler;
  httplib::Server http;
  int port = 0;
  std::mutex ids_mu;
  std::mt19937_64 ids{std::random_device{}()};
  std::mutex counts_mu;
  std::map<std::pair<std::string, std::string>, std::uint64_t> counts;  // (action, outcome) → requests

  std::string request_id() {
    std::lock_guard lock(ids_mu);
    const auto a = ids(), b = ids();
    return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF, a & 0xFFF,
                       0x8000 | ((b >> 48) & 0x3FFF), b & 0xFFFFFFFFFFFF);
  }

  void count(const std::string& action, const std::string& outcome) {
    std::lock_guard lock(counts_mu);
    ++counts[{action.empty() ? "unknown" : action, outcome}];
  }

  // The account a request acts for, or the auth failure as an SQS error.
  std::string authenticate(const httplib::Request& req) {
    if (!opts.credentials) return std::string(default_account);
    std::vector<std::pair<std::string, std::string>> headers(req.headers.begin(), req.headers.end());
    const auto raw_path = req.target.substr(0, req.target.find('?'));
    const auto query = req.target.find('?') == std::string::npos
                           ? std::string()
                           : req.target.substr(req.target.find('?') + 1);
    const signed_request view{req.method, raw_path, query, &headers, req.body};
    const auto outcome = verify_sigv4(view, *opts.credentials, std::chrono::system_clock::now());
    if (outcome.failure) throw sqs::error(outcome.failure->code, outcome.failure->message);
    return outcome.who->account;
  }

  void serve_sqs(const httplib::Request& req, httplib::Response& res) {
    const auto id = request_id();
    const auto target = req.get_header_value("X-Amz-Target");
    auto wire = target.empty() ? sqs::protocol::query : sqs::protocol::json;
    std::string action;
    sqs::reply reply;
    try {
      const auto account = authenticate(req);
      const auto query = req.target.find('?') == std::string::npos
                             ? std::string()
                             : req.target.substr(req.target.find('?') + 1);
      auto r = sqs::decode(req.get_header_value("Content-Type"), target, req.body, query);
      wire = r.wire;
      action = r.action;
      if (!r.params.contains("QueueUrl") && req.path != "/") {
        r.params["QueueUrl"] = fmt::format("http://{}{}", req.get_header_value("Host"), req.path);
      }
      const auto host = req.get_header_value("Host");
      const auto base = host.empty() ? url() : "http://" + host;
      reply = sqs::encode_result(wire, action, handler(r, account, base), id);
      count(action, "ok");
    } catch (const sqs::error& e) {
      reply = sqs::encode_error(wire, e, id);
      count(action, e.code());
    } catch (const spool::error& e) {
      const auto code = e.retryable() ? "ServiceUnavailable" : "InternalError";
      reply = sqs::encode_error(wire, sqs::error(code, e.what()), id);
      count(action, code);
    } catch (const std::exception& e) {
      reply = sqs::encode_error(wire, sqs::error("InternalError", "the server failed this request"), id);
      count(action, "InternalError");
    }
    res.status = reply.status;
    for (const auto& [k, v] : reply.headers) res.set_header(k, v);
    res.set_content(reply.body, reply.content_type);
  }

  std::string url() const {
    const bool v6 = opts.host.find(':') != std::string::npos;
    return fmt::format("http://{}:{}", v6 ? "[" + opts.host + "]" : opts.host, port);
  }

  std::string metrics_text() {
    std::string out =
        "# HELP spool_serve_requests_total SQS requests served, by action and outcome (ok or the error "
        "code).\n"
        "# TYPE spool_serve_requests_total counter\n";
    std::lock_guard lock(counts_mu);
    for (const auto& [key, n] : counts) {
      out += fmt::format("spool_serve_requests_total{{action=\"{}\",outcome=\"{}\"}} {}\n", key.first,
                         key.second, n);
    }
    return out;
  }
};

server::server(server_options options, action_handler handler) : impl_(std::make_unique<impl>()) {
  impl_->opts = std::move(options);
  impl_->handler = std::move(handler);
  auto& http = impl_->http;
  const int threads = impl_->opts.threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  http.set_payload_max_length(impl_->opts.max_body_bytes);
  http.set_read_timeout(30, 0);
  http.set_keep_alive_timeout(5);
  http.set_socket_options([](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const auto sqs = [this](const httplib::Request& req, httplib::Response& res) {
    impl_->serve_sqs(req, res);
  };
  http.Post("/", sqs);
  http.Post(R"(/[0-9]{12}/[A-Za-z0-9_.-]{1,80})", sqs);
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}\n", "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(impl_->metrics_text(), "text/plain; version=0.0.4");
  });
  int port = impl_->opts.port;
  if (port == 0) {
    port = http.bind_to_any_port(impl_->opts.host);
  } else if (!http.bind_to_port(impl_->opts.host, port)) {
    port = -1;
  }
  if (port < 0) {
    throw spool::error(errc::unavailable,
                       fmt::format("spool serve: cannot listen on {}:{} (address in use or not local?)",
                                   impl_->opts.host, impl_->opts.port),
                       "listen_failed");
  }
  impl_->port = port;
}

server::~server() { stop(); }

int server::port() const noexcept { return impl_->port; }

std::string server::url() const { return impl_->url(); }

void server::run() { impl_->http.listen_after_bind(); }

bool server::running() const { return impl_->http.is_running(); }

void server::stop() { impl_->http.stop(); }

}  // namespace spool::serve
