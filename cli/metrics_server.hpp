// The --metrics-addr endpoint of the CLI's long-running commands (relay,
// mq work, ops work): GET /metrics (Prometheus text) and GET /healthz, served
// by cpp-httplib on a thread of its own (docs/METRICS.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "spool/prometheus.hpp"

namespace CLI {
class App;
}

namespace spool::cli {

struct host_port {
  std::string host;  // as given; IPv6 without the brackets
  int port = 0;      // 0: any free port
};

// Parses HOST:PORT or [IPV6]:PORT (PORT 0..65535). Errors: invalid_argument
// naming flag and text.
[[nodiscard]] host_port parse_host_port(std::string_view text, std::string_view flag);

struct health_report {
  bool healthy = true;  // 200, else 503
  std::string body;     // one JSON document
};

struct metrics_endpoint {
  std::function<std::string()> metrics;  // the exposition; called per scrape
  // details: GET /healthz?details=1 asked for error texts (the last database
  // or sink error), which a plain GET never shows (docs/SECURITY.md).
  std::function<health_report(bool details)> health;
};

// Serves endpoint at addr until destroyed. The callbacks run on the server's
// threads, concurrently with the command; an exception in one becomes a 500.
// Construct it after the command's signal_scope, so its threads leave
// SIGINT/SIGTERM to the command's sigwait.
// Thread safety: url() from any thread; destroy from the constructing one.
class metrics_server {
 public:
  // Binds (port 0: a free port) and starts serving. Errors: invalid_argument
  // (malformed address), unavailable (the address cannot be bound).
  metrics_server(std::string_view addr, metrics_endpoint endpoint);
  ~metrics_server();  // stops accepting and joins
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;

  // http://HOST:PORT/metrics with the bound port.
  [[nodiscard]] std::string url() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Empty addr: nullptr. Otherwise a running server, announced with one stderr
// line "metrics: listening on <url>" (printed whatever the log level, so
// scripts and tests can find a port chosen by port 0).
[[nodiscard]] std::unique_ptr<metrics_server> serve_metrics(const std::string& addr,
                                                            metrics_endpoint endpoint);

// Runs write_backlog (the scrape's database reads, e.g. queue counts) and adds
// the gauge spool_backlog_up{labels} = 1, or 0 when it threw (logged at
// debug; what it wrote before throwing is kept): a scrape never fails
// because the database is slow or away.
void write_backlog(spool::prometheus::text_writer& w, const spool::prometheus::labels& labels,
                   const std::function<void()>& write_backlog);

// Adds --metrics-addr to a long-running command.
void add_metrics_option(CLI::App& cmd, std::string& addr);

}  // namespace spool::cli
