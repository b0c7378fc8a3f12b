// A real webhook receiver for the HTTP sink tests: cpp-httplib's server (or
// its TLS server) on 127.0.0.1 with an ephemeral port, served from a thread
// of its own. It records every request and answers from a script the test
// sets; a scripted answer may hang until the test releases it, or until the
// receiver stops. stop() then start() serves again on the same port (an
// outage and a recovery). Also: a self-signed certificate made with the
// OpenSSL API, and an HMAC-SHA256 computed independently of Spool's.
// Thread safety: every member may be called from any thread.
#pragma once

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace spool::test {

// A key and a self-signed certificate (its own CA) for the names in san.
struct test_certificate {
  std::unique_ptr<X509, decltype(&X509_free)> cert{nullptr, X509_free};
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{nullptr, EVP_PKEY_free};

  static test_certificate make(const char* san = "IP:127.0.0.1,DNS:localhost") {
    test_certificate c;
    c.key.reset(EVP_EC_gen("P-256"));
    c.cert.reset(X509_new());
    if (!c.key || !c.cert) throw std::runtime_error("test_certificate: OpenSSL allocation failed");
    X509* x = c.cert.get();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
    X509_set_pubkey(x, c.key.get());
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("spool test"),
                               -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
    for (const auto& [nid, value] :
         {std::pair{NID_subject_alt_name, san}, std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      if (ext == nullptr) throw std::runtime_error("test_certificate: extension failed");
      X509_add_ext(x, ext, -1);
      X509_EXTENSION_free(ext);
    }
    if (X509_sign(x, c.key.get(), EVP_sha256()) == 0)
      throw std::runtime_error("test_certificate: sign failed");
    return c;
  }

  // The certificate as PEM at path (a CA file for the client).
  void write_pem(const std::filesystem::path& path) const {
    std::unique_ptr<FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "w"), std::fclose);
    if (!f || PEM_write_X509(f.get(), cert.get()) != 1)
      throw std::runtime_error("cannot write " + path.string());
  }
};

// "sha256=<lowercase hex>" of body under key, as a receiver would check it.
inline std::string expected_signature(const std::string& key, const std::string& body) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(body.data()), body.size(), mac, &size);
  std::string out = "sha256=";
  char hex[3];
  for (unsigned int i = 0; i < size; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", mac[i]);
    out += hex;
  }
  return out;
}

class webhook_receiver {
 public:
  struct request {
    std::string path, body;
    httplib::Headers headers;
    [[nodiscard]] std::string header(const std::string& name) const {
      const auto it = headers.find(name);
      return it == headers.end() ? "" : it->second;
    }
  };
  struct reply {
    int status = 200;
    httplib::Headers headers;
    std::string body;
    bool hang = false;  // hold the answer until release() or stop()
  };

  // Plain HTTP; with a certificate, HTTPS. Starts serving at once.
  explicit webhook_receiver(const test_certificate* tls = nullptr) : tls_(tls) { start(); }
  ~webhook_receiver() { stop(); }
  webhook_receiver(const webhook_receiver&) = delete;
  webhook_receiver& operator=(const webhook_receiver&) = delete;

  // Serves (again): a fresh server on the port of the first start.
  void start() {
    std::lock_guard lock(life_);
    if (server_) return;
    {
      std::lock_guard l(m_);
      released_ = false;
    }
    server_ = tls_ ? std::make_unique<httplib::SSLServer>(tls_->cert.get(), tls_->key.get())
                   : std::make_unique<httplib::Server>();
    server_->Post(".*", [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    if (port_ == 0) {
      port_ = server_->bind_to_any_port("127.0.0.1");
    } else if (!server_->bind_to_port("127.0.0.1", port_)) {
      port_ = -1;
    }
    if (port_ <= 0) throw std::runtime_error("webhook_receiver: cannot bind 127.0.0.1");
    thread_ = std::thread([s = server_.get()] { s->listen_after_bind(); });
    // Server::stop only works once the accept loop runs.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!server_->is_running() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Releases held answers and stops serving: connections are then refused.
  void stop() {
    std::lock_guard lock(life_);
    if (!server_) return;
    release();
    server_->stop();
    thread_.join();
    server_.reset();
  }

  [[nodiscard]] std::string url(const std::string& path = "/hook") const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + path;
  }

  // The answers to the next requests, in order; the last one repeats.
  void answer(std::vector<reply> script) {
    std::lock_guard lock(m_);
    script_.assign(script.begin(), script.end());
  }
  void answer(int status, httplib::Headers headers = {}) {
    answer({reply{status, std::move(headers), {}, false}});
  }

  void release() {
    std::lock_guard lock(m_);
    released_ = true;
    cv_.notify_all();
  }

  [[nodiscard]] std::vector<request> requests() const {
    std::lock_guard lock(m_);
    return requests_;
  }
  [[nodiscard]] int held() const {
    std::lock_guard lock(m_);
    return held_;
  }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    reply r;
    {
      std::unique_lock lock(m_);
      requests_.push_back({req.path, req.body, req.headers});
      if (!script_.empty()) {
        r = script_.front();
        if (script_.size() > 1) script_.pop_front();
      }
      if (r.hang) {
        ++held_;
        cv_.wait_for(lock, std::chrono::seconds(60), [&] { return released_; });
        --held_;
      }
    }
    res.status = r.status;
    for (const auto& [k, v] : r.headers) res.set_header(k, v);
    if (!r.body.empty()) res.set_content(r.body, "text/plain");
  }

  const test_certificate* tls_;
  std::mutex life_;  // start/stop
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<reply> script_;
  std::vector<request> requests_;
  bool released_ = false;
  int held_ = 0;
};

}  // namespace spool::test
