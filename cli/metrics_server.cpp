#include "metrics_server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <thread>

#include "logging.hpp"
#include "spool/error.hpp"
#include "spool/prometheus.hpp"

namespace spool::cli {

host_port parse_host_port(std::string_view text, std::string_view flag) {
  const auto bad = [&](std::string_view why) {
    return spool::error(
        spool::errc::invalid_argument,
        fmt::format("{} \"{}\": {} (expected HOST:PORT, e.g. 127.0.0.1:9464)", flag, text, why));
  };
  host_port out;
  std::string_view port_text;
  // A port alone (":9464" or "9464") binds loopback: an endpoint reaches
  // other machines only when its address says so (SECURITY.md).
  if (const auto digits = text.starts_with(':') ? text.substr(1) : text;
      !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
    out.host = "127.0.0.1";
    port_text = digits;
  } else if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || text.substr(close + 1, 1) != ":")
      throw bad("malformed [IPv6]:PORT");
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) throw bad("no port");
    out.host = std::string(text.substr(0, colon));
    if (out.host.find(':') != std::string::npos) throw bad("an IPv6 address needs brackets");
    port_text = text.substr(colon + 1);
  }
  if (out.host.empty()) throw bad("no host");
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), out.port);
  if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() || out.port < 0 ||
      out.port > 65535) {
    throw bad("the port must be a number from 0 to 65535");
  }
  return out;
}

struct metrics_server::impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> listen_returned{false};
  std::string url;
};

metrics_server::metrics_server(std::string_view addr, metrics_endpoint endpoint)
    : impl_(std::make_unique<impl>()) {
  const auto hp = parse_host_port(addr, "--metrics-addr");
  auto& svr = impl_->server;
  // Scrapes are rare and cheap: two threads are plenty. httplib takes
  // ownership of the raw pointer it is given.
  svr.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // Idle keep-alive connections hold a server thread; a short timeout keeps
  // the shutdown at a signal prompt.
  svr.set_keep_alive_timeout(1);
  // httplib's default sets SO_REUSEPORT, which would let a second command
  // bind the same port and steal half the scrapes. SO_REUSEADDR only: a
  // restart can rebind while old connections linger in TIME_WAIT.
  svr.set_socket_options([](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  svr.Get("/metrics", [ep = endpoint](const httplib::Request&, httplib::Response& res) {
    try {
      res.set_content(ep.metrics(), std::string(spool::prometheus::content_type).c_str());
    } catch (const std::exception& e) {
      res.status = 500;
      res.set_content(fmt::format("metrics failed: {}\n", e.what()), "text/plain");
    }
  });
  svr.Get("/healthz", [ep = endpoint](const httplib::Request& req, httplib::Response& res) {
    // Error texts can name hosts, tables or a sink's URL: only on request.
    const bool details = req.get_param_value("details") == "1";
    try {
      const auto h = ep.health(details);
      res.status = h.healthy ? 200 : 503;
      res.set_content(h.body + "\n", "application/json");
    } catch (const std::exception& e) {
      res.status = 503;
      res.set_content(details ? fmt::format("health check failed: {}\n", e.what()) : "health check failed\n",
                      "text/plain");
    }
  });
  int port = hp.port;
  if (port == 0) {
    port = svr.bind_to_any_port(hp.host);
  } else if (!svr.bind_to_port(hp.host, port)) {
    port = -1;
  }
  if (port < 0) {
    throw spool::error(
        spool::errc::unavailable,
        fmt::format("--metrics-addr \"{}\": cannot listen there (address in use or not local?)", addr));
  }
  const bool v6 = hp.host.find(':') != std::string::npos;
  impl_->url = fmt::format("http://{}:{}/metrics", v6 ? "[" + hp.host + "]" : hp.host, port);
  impl_->thread = std::thread([this] {
    impl_->server.listen_after_bind();
    impl_->listen_returned = true;
  });
  // httplib's stop() does nothing until the server runs: wait for it, so the
  // destructor's stop() cannot be lost.
  while (!svr.is_running() && !impl_->listen_returned)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

metrics_server::~metrics_server() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string metrics_server::url() const { return impl_->url; }

std::unique_ptr<metrics_server> serve_metrics(const std::string& addr, metrics_endpoint endpoint) {
  if (addr.empty()) return nullptr;
  auto server = std::make_unique<metrics_server>(addr, std::move(endpoint));
  std::fprintf(stderr, "metrics: listening on %s\n", server->url().c_str());
  std::fflush(stderr);
  return server;
}

void write_backlog(spool::prometheus::text_writer& w, const spool::prometheus::labels& labels,
                   const std::function<void()>& write_backlog) {
  bool ok = true;
  try {
    write_backlog();
  } catch (const std::exception& e) {
    ok = false;
    log().debug("metrics: backlog query failed: {}", e.what());
  }
  w.gauge("spool_backlog_up", "1 when this scrape's backlog query succeeded, else 0.", labels, ok ? 1 : 0);
}

void add_metrics_option(CLI::App& cmd, std::string& addr) {
  cmd.add_option(
      "--metrics-addr", addr,
      "Serve GET /metrics (Prometheus text format) and GET /healthz on HOST:PORT while running; a PORT "
      "alone binds 127.0.0.1 (other machines reach it only through an address given here); port 0 picks a "
      "free port (the address is printed on stderr as \"metrics: listening on URL\")");
}

}  // namespace spool::cli
