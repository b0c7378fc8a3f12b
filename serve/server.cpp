#include "serve/server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <random>

#include "serve/sigv4.hpp"
#include "spool/error.hpp"

namespace spool::serve {

namespace {

// Upper bounds of spool_serve_request_duration_seconds' buckets: from a quick
// call on SQLite (1 ms) to the longest long poll (20 s) and beyond.
constexpr std::array duration_bounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                     0.5,   1.0,    2.5,   5.0,  10.0,  20.0, 30.0};
constexpr std::array<const char*, duration_bounds.size()> duration_labels{
    "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
    "0.5",   "1",      "2.5",   "5",    "10",    "20",   "30"};

struct duration_histogram {
  std::array<std::uint64_t, duration_bounds.size() + 1> buckets{};  // per bucket, the last one +Inf
  double sum = 0;
  std::uint64_t count = 0;
};

// The oldest error OpenSSL queued on this thread, as text.
std::string openssl_error() {
  const auto code = ERR_get_error();
  if (code == 0) return "unknown error";
  std::array<char, 256> text{};
  ERR_error_string_n(code, text.data(), text.size());
  return text.data();
}

// An HTTPS server with options' certificate and key, or plain HTTP without.
std::unique_ptr<httplib::Server> make_http_server(const server_options& o) {
  check_tls_options(o);
  if (o.tls_cert.empty()) return std::make_unique<httplib::Server>();
  std::string failure;
  // httplib only reports that its SSL_CTX setup failed, so the setup is ours
  // and keeps the reason; the callback must not throw through httplib.
  auto https = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    ERR_clear_error();
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, o.tls_cert.c_str()) != 1) {
      failure =
          fmt::format("cannot load the certificate chain {} (--tls-cert): {}", o.tls_cert, openssl_error());
    } else if (SSL_CTX_use_PrivateKey_file(&ctx, o.tls_key.c_str(), SSL_FILETYPE_PEM) != 1) {
      failure = fmt::format("cannot load the private key {} (--tls-key): {}", o.tls_key, openssl_error());
    } else if (SSL_CTX_check_private_key(&ctx) != 1) {
      failure = fmt::format("the private key {} does not match the certificate {}: {}", o.tls_key, o.tls_cert,
                            openssl_error());
    }
    return failure.empty();
  });
  if (!https->is_valid()) {
    throw spool::error(
        errc::invalid_argument,
        "spool serve: " + (failure.empty() ? "cannot set up TLS: " + openssl_error() : failure),
        "tls_setup_failed");
  }
  return https;
}

}  // namespace

void check_tls_options(const server_options& options) {
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    throw spool::error(
        errc::invalid_argument,
        "spool serve: --tls-cert and --tls-key go together: give both (HTTPS) or neither (HTTP)",
        "tls_incomplete");
  }
}

struct server::impl {
  server_options opts;
  action_handler handler;
  std::unique_ptr<httplib::Server> http;
  int port = 0;
  std::mutex ids_mu;
  std::mt19937_64 ids{std::random_device{}()};
  std::mutex counts_mu;                                                 // guards counts and durations
  std::map<std::pair<std::string, std::string>, std::uint64_t> counts;  // (action, outcome) → requests
  std::map<std::string, duration_histogram> durations;                  // action → its requests' times
  sigv4::signing_keys keys;  // derived once per credential, day and region

  const char* scheme() const { return opts.tls_cert.empty() ? "http" : "https"; }

  std::string request_id() {
    std::lock_guard lock(ids_mu);
    const auto a = ids(), b = ids();
    return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF, a & 0xFFF,
                       0x8000 | ((b >> 48) & 0x3FFF), b & 0xFFFFFFFFFFFF);
  }

  // Counts a request and its time. action is empty when it was never decoded;
  // decode() refuses names that are not SQS actions, so the labels are bounded.
  void record(const std::string& action, const std::string& outcome, double seconds) {
    const std::string label = action.empty() ? "unknown" : action;
    std::size_t bucket = 0;
    while (bucket < duration_bounds.size() && seconds > duration_bounds[bucket]) ++bucket;
    std::lock_guard lock(counts_mu);
    ++counts[{label, outcome}];
    auto& h = durations[label];
    ++h.buckets[bucket];
    h.sum += seconds;
    ++h.count;
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
    const auto outcome = verify_sigv4(view, *opts.credentials, std::chrono::system_clock::now(), "sqs", &keys);
    if (outcome.failure) throw sqs::error(outcome.failure->code, outcome.failure->message);
    return outcome.who->account;
  }

  void serve_sqs(const httplib::Request& req, httplib::Response& res) {
    const auto started = std::chrono::steady_clock::now();
    const auto id = request_id();
    const auto target = req.get_header_value("X-Amz-Target");
    auto wire = target.empty() ? sqs::protocol::query : sqs::protocol::json;
    std::string action;
    std::string outcome = "ok";
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
        r.params["QueueUrl"] = fmt::format("{}://{}{}", scheme(), req.get_header_value("Host"), req.path);
      }
      const auto host = req.get_header_value("Host");
      const auto base = host.empty() ? url() : fmt::format("{}://{}", scheme(), host);
      reply = sqs::encode_result(wire, action, handler(r, account, base), id);
    } catch (const sqs::error& e) {
      reply = sqs::encode_error(wire, e, id);
      outcome = e.code();
    } catch (const spool::error& e) {
      outcome = e.retryable() ? "ServiceUnavailable" : "InternalError";
      reply = sqs::encode_error(wire, sqs::error(outcome, e.what()), id);
    } catch (const std::exception& e) {
      outcome = "InternalError";
      reply = sqs::encode_error(wire, sqs::error(outcome, "the server failed this request"), id);
    }
    record(action, outcome,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    res.status = reply.status;
    for (const auto& [k, v] : reply.headers) res.set_header(k, v);
    res.set_content(reply.body, reply.content_type);
  }

  void serve_console(const httplib::Request& req, httplib::Response& res) {
    http_request r;
    r.method = req.method;
    r.path = req.path;
    r.body = req.body;
    r.tls = !opts.tls_cert.empty();
    for (const auto& [k, v] : req.params) r.query.emplace(k, v);
    for (const auto& [k, v] : req.headers) {
      std::string name = k;
      for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      r.headers.emplace(std::move(name), v);
    }
    http_response out;
    try {
      out = opts.console(r);
    } catch (const std::exception&) {
      out = {500,
             "application/json",
             "{\"error\":\"internal\",\"message\":\"the server failed this request\"}",
             {}};
    }
    res.status = out.status;
    for (const auto& [k, v] : out.headers) res.set_header(k, v);
    res.set_content(out.body, out.content_type);
  }

  std::string url() const {
    const bool v6 = opts.host.find(':') != std::string::npos;
    return fmt::format("{}://{}:{}", scheme(), v6 ? "[" + opts.host + "]" : opts.host, port);
  }

  std::string metrics_text() {
    // Asked outside counts_mu: the service takes no lock of ours.
    const std::int64_t waiting = opts.long_polls_waiting ? opts.long_polls_waiting() : 0;
    std::string out =
        "# HELP spool_serve_requests_total SQS requests served, by action and outcome (ok or the error "
        "code).\n"
        "# TYPE spool_serve_requests_total counter\n";
    std::lock_guard lock(counts_mu);
    for (const auto& [key, n] : counts) {
      out += fmt::format("spool_serve_requests_total{{action=\"{}\",outcome=\"{}\"}} {}\n", key.first,
                         key.second, n);
    }
    out +=
        "# HELP spool_serve_request_duration_seconds Time to serve an SQS request, by action (long polls "
        "included).\n"
        "# TYPE spool_serve_request_duration_seconds histogram\n";
    for (const auto& [action, h] : durations) {
      std::uint64_t below = 0;  // Prometheus buckets are cumulative
      for (std::size_t i = 0; i < duration_bounds.size(); ++i) {
        below += h.buckets[i];
        out += fmt::format("spool_serve_request_duration_seconds_bucket{{action=\"{}\",le=\"{}\"}} {}\n",
                           action, duration_labels[i], below);
      }
      out += fmt::format("spool_serve_request_duration_seconds_bucket{{action=\"{}\",le=\"+Inf\"}} {}\n",
                         action, h.count);
      out += fmt::format("spool_serve_request_duration_seconds_sum{{action=\"{}\"}} {:.6f}\n", action, h.sum);
      out += fmt::format("spool_serve_request_duration_seconds_count{{action=\"{}\"}} {}\n", action, h.count);
    }
    out += fmt::format(
        "# HELP spool_serve_long_polls_waiting ReceiveMessage calls waiting in a long poll now.\n"
        "# TYPE spool_serve_long_polls_waiting gauge\n"
        "spool_serve_long_polls_waiting {}\n",
        waiting);
    return out;
  }
};

server::server(server_options options, action_handler handler) : impl_(std::make_unique<impl>()) {
  impl_->opts = std::move(options);
  impl_->handler = std::move(handler);
  impl_->http = make_http_server(impl_->opts);
  auto& http = *impl_->http;
  const int threads = impl_->opts.threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  http.set_payload_max_length(impl_->opts.max_body_bytes);
  http.set_read_timeout(static_cast<time_t>(impl_->opts.read_timeout.count()), 0);
  http.set_keep_alive_timeout(5);
  http.set_keep_alive_max_count(impl_->opts.keep_alive_requests);
  // Answers are small writes: without TCP_NODELAY, Nagle's algorithm waits for
  // the client's delayed ACK and every call takes 40 ms more.
  http.set_tcp_nodelay(true);
  http.set_socket_options([](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const auto sqs = [this](const httplib::Request& req, httplib::Response& res) {
    impl_->serve_sqs(req, res);
  };
  // httplib reads an unparsable Content-Length as none: refuse it, and two
  // that differ (a request-smuggling shape), before any handler runs.
  http.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    const auto n = req.get_header_value_count("Content-Length");
    const auto first = req.get_header_value("Content-Length");
    bool bad = n > 0 && (first.empty() || first.size() > 19 ||
                         first.find_first_not_of("0123456789") != std::string::npos);
    for (std::size_t i = 1; i < n && !bad; ++i) bad = req.get_header_value("Content-Length", i) != first;
    if (!bad) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 400;
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  http.Post("/", sqs);
  http.Post(R"(/[0-9]{12}/[A-Za-z0-9_.-]{1,80})", sqs);
  if (impl_->opts.console) {
    const auto console = [this](const httplib::Request& req, httplib::Response& res) {
      impl_->serve_console(req, res);
    };
    http.Get(R"(/console(/.*)?)", console);
    http.Post(R"(/console(/.*)?)", console);
    // A browser that opens the server's address lands on the console.
    http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/console/"); });
  }
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

void server::run() { impl_->http->listen_after_bind(); }

bool server::running() const { return impl_->http->is_running(); }

void server::stop() { impl_->http->stop(); }

}  // namespace spool::serve
