// The HTTP server of `spool serve`: the SQS API at POST / (and at a queue's
// URL, where the query protocol may post), GET /healthz and GET /metrics.
// Every SQS request is authenticated (SigV4) unless the server runs without
// auth, then decoded in its protocol and handed to the action handler. The
// console, when given, is served under /console/ (its own login, not SigV4).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "serve/credentials.hpp"
#include "serve/http_site.hpp"
#include "serve/sqs/protocol.hpp"

namespace spool::serve {

// Runs one decoded SQS request for the caller's account; base_url is
// "http://HOST" ("https://HOST" under TLS) as the client addressed the
// server (for queue URLs). Returns
// the result in the JSON protocol's shape, or throws sqs::error. Called from
// the server's threads at once: must be thread-safe.
using action_handler = std::function<nlohmann::json(const sqs::request&, const std::string& account,
                                                    const std::string& base_url)>;

struct server_options {
  std::string host = "127.0.0.1";
  int port = 9324;  // 0: any free port (see server::port())
  // Without credentials every request is served as account 000000000000.
  std::optional<credential_store> credentials;
  std::size_t max_body_bytes = 2u << 20;
  // A connection holds a thread while it sends its request and while its
  // long poll waits (up to 20 s), so this bounds the long polls served at
  // once; idle threads cost little.
  int threads = 64;
  // A keep-alive connection is closed after serving this many requests, so
  // that connections waiting beyond the threads get a turn. SDKs keep their
  // connections open; cpp-httplib's default of 5 made them reconnect every
  // few calls, which cost a TCP handshake and a thread hand-off each time.
  std::size_t keep_alive_requests = 100;
  // A connection that sends nothing for this long while its request is due
  // (its headers, its body) is closed, so that clients which stall cannot
  // hold the threads for long (SECURITY.md, hostile HTTP).
  std::chrono::seconds read_timeout{5};
  // HTTPS when set, both or neither: PEM files of the certificate chain
  // (the server's first) and of its unencrypted private key.
  std::string tls_cert;
  std::string tls_key;
  // The value of the gauge spool_serve_long_polls_waiting (empty: 0). Called
  // from request threads at once: must be thread-safe.
  std::function<std::int64_t()> long_polls_waiting;
  // The console: every request under /console/ (and GET / from a browser,
  // redirected there). Unset: no console, and those paths are 404.
  site_handler console;
};

// Throws spool::error(invalid_argument) unless options names both or neither
// of tls_cert and tls_key (a caller may check before it opens a database).
void check_tls_options(const server_options& options);

// Thread safety: construct, run() and stop() from the owner; stop() may be
// called from any thread (a signal waiter) while run() blocks in another.
class server {
 public:
  // Loads the TLS certificate and key, if any, and binds the address. Throws
  // spool::error: invalid_argument for TLS options that check_tls_options
  // refuses or files that do not load, unavailable when it cannot bind.
  server(server_options options, action_handler handler);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // The bound port (the chosen one when options.port was 0).
  [[nodiscard]] int port() const noexcept;
  // "http://HOST:PORT", or "https://HOST:PORT" under TLS.
  [[nodiscard]] std::string url() const;
  // Serves until stop(). Requests in flight finish first.
  void run();
  // True once run() accepts connections (stop() before that is lost).
  [[nodiscard]] bool running() const;
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spool::serve
