// The HTTP webhook sink of outbox.md §8 on cpp-httplib (Debian's
// libcpp-httplib, built with OpenSSL). One connection per publish: the sink
// holds only its validated options, so concurrent publishes share nothing.
#include <fmt/format.h>
#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "http_status.hpp"
#include "http_url.hpp"
#include "spool/error.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/webhook.hpp"
#include "webhook_signature.hpp"

namespace spool::outbox {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw error(errc::invalid_argument, "http sink: " + message, "invalid_config");
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// RFC 9110 token characters.
bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// The sink's own headers; a user header may not replace them.
bool is_reserved(std::string_view name) {
  const std::string n = lower(name);
  return n == "content-type" || n == "content-length" || n == "host" || n == "idempotency-key" ||
         n == "transfer-encoding" || n == "connection" || n.starts_with("x-spool-") ||
         n.starts_with("webhook-");
}

void validate(const http_sink_options& o) {
  if (o.secret.empty()) invalid("secret is empty (X-Spool-Signature needs a key)");
  if (o.connect_timeout.count() <= 0) {
    invalid(fmt::format("connect_timeout = {} ms must be positive", o.connect_timeout.count()));
  }
  if (o.read_timeout.count() <= 0) {
    invalid(fmt::format("read_timeout = {} ms must be positive", o.read_timeout.count()));
  }
  if (o.max_response_bytes == 0) invalid("max_response_bytes = 0 must be positive");
  // Checks the secrets (empty, whsec_ but not base64) once, here.
  if (!o.standard_webhook_secrets.empty())
    (void)standard_webhook_signature(o.standard_webhook_secrets, "", 0, "");
  for (const auto& [name, value] : o.headers) {
    if (!is_token(name)) invalid(fmt::format("header name \"{}\" is not a valid token", name));
    if (is_reserved(name)) invalid(fmt::format("header {} is set by the sink and cannot be replaced", name));
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      invalid(fmt::format("header {}: the value contains CR, LF or NUL", name));
    }
  }
  if (!o.ca_file.empty()) {
    // Load it once here so a bad path fails at construction, not per message.
    std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> probe(X509_STORE_new(), X509_STORE_free);
    if (!probe || X509_STORE_load_file(probe.get(), o.ca_file.c_str()) != 1) {
      invalid(fmt::format("ca_file {}: cannot load a PEM certificate from it", o.ca_file));
    }
  }
}

// What arrived of the response before the body.
struct response_head {
  int status = 0;
  std::string reason, retry_after;
  std::size_t body_bytes = 0;
};

struct exchange_result {
  bool ok = false;           // client.send's result
  bool interrupted = false;  // stop ended the exchange
};

// Runs client.send on a thread of its own and waits for it or for stop.
// On stop it shuts the client's socket down (ClientImpl::stop, safe while
// a request is in flight) until the exchange ends: the read or write in
// progress fails at once. ClientImpl::stop waits while a connect or TLS
// handshake holds the client's socket lock, so a stop during the connect
// takes at most connect_timeout. The thread blocks SIGPIPE, so a peer that
// closes during a TLS write (OpenSSL writes without MSG_NOSIGNAL) cannot
// kill the process; the signal stays pending on that thread and dies with it.
// Returns what send returned and whether stop interrupted the exchange.
exchange_result send_stoppable(httplib::ClientImpl& client, httplib::Request& req, httplib::Response& res,
                               httplib::Error& err, const std::stop_token& stop) {
  std::mutex m;
  std::condition_variable_any cv;
  bool done = false;
  exchange_result result;
  std::thread worker([&] {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    const bool ok = client.send(req, res, err);
    std::lock_guard lock(m);
    result.ok = ok;
    done = true;
    cv.notify_all();
  });
  std::unique_lock lock(m);
  if (!cv.wait(lock, stop, [&] { return done; })) {
    result.interrupted = true;
    while (!done) {
      lock.unlock();
      client.stop();
      lock.lock();
      // Again shortly, in case the stop landed before the socket existed.
      cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return done; });
    }
  }
  lock.unlock();
  worker.join();
  return result;
}

class http_sink final : public sink {
 public:
  explicit http_sink(http_sink_options o) : opts_(std::move(o)), url_(detail::parse_http_url(opts_.url)) {
    validate(opts_);
  }

  sink_outcome publish(const claimed_message& m, std::stop_token stop) override {
    if (stop.stop_requested()) return sink_outcome::transient("http_stopped", "stopped before the request");
    const auto& e = m.message;
    httplib::Request req;
    req.method = "POST";
    req.path = url_.target;
    req.body = canonical_json(e);
    for (const auto& [name, value] : opts_.headers) req.headers.emplace(name, value);
    if (!req.has_header("User-Agent")) req.headers.emplace("User-Agent", "spool-outbox-relay");
    req.headers.emplace("Content-Type", "application/json");
    req.headers.emplace("Idempotency-Key", e.id);
    req.headers.emplace("X-Spool-Topic", e.topic);
    req.headers.emplace("X-Spool-Claim-Count", std::to_string(e.claim_count));
    req.headers.emplace("X-Spool-Failure-Count", std::to_string(e.failure_count));
    req.headers.emplace("X-Spool-Signature", detail::webhook_signature(opts_.secret, req.body));
    if (!opts_.standard_webhook_secrets.empty()) {
      const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
      req.headers.emplace("webhook-id", e.id);
      req.headers.emplace("webhook-timestamp", std::to_string(now));
      req.headers.emplace("webhook-signature",
                          standard_webhook_signature(opts_.standard_webhook_secrets, e.id, now, req.body));
    }

    response_head head;
    req.response_handler = [&head](const httplib::Response& r) {
      head.status = r.status;
      head.reason = r.reason;
      head.retry_after = r.get_header_value("Retry-After");
      return true;
    };
    // The body is not used: read at most max_response_bytes of it, then hang up.
    req.content_receiver = [&head, limit = opts_.max_response_bytes](const char*, std::size_t n,
                                                                     std::uint64_t, std::uint64_t) {
      head.body_bytes += n;
      return head.body_bytes <= limit;
    };

    auto client = make_client();
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const auto sent = send_stoppable(*client, req, res, err, stop);
    if (head.status == 0 && sent.ok) {
      // No response_handler call for a response without a body (204, 304).
      head.status = res.status;
      head.reason = res.reason;
      head.retry_after = res.get_header_value("Retry-After");
    }
    if (head.status > 0) {
      // Headers arrived: they decide, whatever happened to the body after them.
      return detail::classify_http_status(head.status, head.reason, head.retry_after,
                                          std::chrono::system_clock::now());
    }
    return failure(err, sent.interrupted, *client);
  }

 private:
  [[nodiscard]] std::unique_ptr<httplib::ClientImpl> make_client() const {
    std::unique_ptr<httplib::ClientImpl> c;
    if (url_.tls) {
      auto tls = std::make_unique<httplib::SSLClient>(url_.host, url_.port);
      tls->enable_server_certificate_verification(opts_.verify_tls);
      // Added to the context's store; httplib adds the system's default paths
      // when it loads certificates, so ca_file extends the trusted set.
      if (!opts_.ca_file.empty() &&
          SSL_CTX_load_verify_locations(tls->ssl_context(), opts_.ca_file.c_str(), nullptr) != 1) {
        throw error(errc::unavailable, fmt::format("http sink: cannot load ca_file {}", opts_.ca_file),
                    "sink_failed");
      }
      c = std::move(tls);
    } else {
      c = std::make_unique<httplib::ClientImpl>(url_.host, url_.port);
    }
    c->set_connection_timeout(opts_.connect_timeout);
    c->set_read_timeout(opts_.read_timeout);
    c->set_write_timeout(opts_.read_timeout);
    c->set_keep_alive(false);
    c->set_follow_location(false);  // §8: a redirect is a transient failure
    c->set_decompress(false);       // the body is discarded anyway
    return c;
  }

  [[nodiscard]] sink_outcome failure(httplib::Error err, bool stopped, httplib::ClientImpl& client) const {
    // host:port only: the path and query of a webhook URL often carry a token.
    const std::string where = url_.host.find(':') != std::string::npos
                                  ? fmt::format("[{}]:{}", url_.host, url_.port)
                                  : fmt::format("{}:{}", url_.host, url_.port);
    if (stopped) return sink_outcome::transient("http_stopped", "request to " + where + " stopped");
    using E = httplib::Error;
    switch (err) {
      case E::Connection:
        return sink_outcome::transient("http_connect", "cannot connect to " + where);
      case E::ConnectionTimeout:
        return sink_outcome::transient("http_connect_timeout", "connect to " + where + " timed out");
      case E::Read:
        return sink_outcome::transient("http_read",
                                       "no response from " + where + " (timed out or connection closed)");
      case E::Write:
        return sink_outcome::transient("http_write", "sending the request to " + where + " failed");
      case E::SSLConnection:
        return sink_outcome::transient("http_tls", "TLS handshake with " + where + " failed");
      case E::SSLServerVerification: {
        const long v = url_.tls ? static_cast<httplib::SSLClient&>(client).get_openssl_verify_result() : 0;
        return sink_outcome::transient(
            "http_tls_verify",
            fmt::format("the certificate of {} was not verified: {}", where,
                        v != X509_V_OK ? X509_verify_cert_error_string(v) : "host name mismatch"));
      }
      case E::SSLLoadingCerts:
        return sink_outcome::transient("http_tls_ca", "loading the trusted certificates failed");
      default:
        return sink_outcome::transient(
            "http_failed", fmt::format("request to {} failed: {}", where, httplib::to_string(err)));
    }
  }

  http_sink_options opts_;
  detail::http_url url_;
};

}  // namespace

std::shared_ptr<sink> make_http_sink(http_sink_options options) {
  return std::make_shared<http_sink>(std::move(options));
}

}  // namespace spool::outbox
