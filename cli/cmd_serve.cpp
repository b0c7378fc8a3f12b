// `spool serve`: the SQS API over a Spool database (serve/). SIGINT/SIGTERM
// stop it: the listener closes and requests in flight finish.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "common.hpp"
#include "logging.hpp"
#include "metrics_server.hpp"
#include "serve/console/site.hpp"
#include "serve/server.hpp"
#include "serve/sqs/service.hpp"
#include "signal_scope.hpp"
#include "spool/error.hpp"

namespace spool::cli {

namespace {

struct serve_args {
  std::string listen = "127.0.0.1:9324";
  std::string credentials;
  std::string schema;
  std::string tls_cert;
  std::string tls_key;
  bool no_auth = false;
  std::string console_token;
  std::string console_token_file;
  bool console_read_only = false;
  bool no_console = false;
  int console_sample_seconds = 10;
};

bool loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The console's token: --console-token, or the first line of --console-token-file.
std::string console_token(const serve_args& a) {
  if (a.console_token_file.empty()) return a.console_token;
  std::ifstream in(a.console_token_file);
  std::string token;
  if (!in || !std::getline(in, token) || token.empty()) {
    throw spool::error(errc::invalid_argument,
                       fmt::format("spool serve: --console-token-file {} holds no token", a.console_token_file),
                       "console_token_unreadable");
  }
  return token;
}

void run_serve(cli_context& ctx, const serve_args& a) {
  if (a.credentials.empty() && !a.no_auth) {
    throw spool::error(
        errc::invalid_argument,
        "spool serve needs --credentials FILE (every request signed with AWS Signature Version 4), "
        "or --no-auth for local development",
        "auth_required");
  }
  signal_scope signals;
  const auto hp = parse_host_port(a.listen, "--listen");
  spool::serve::server_options options;
  options.host = hp.host;
  options.port = hp.port;
  options.tls_cert = a.tls_cert;
  options.tls_key = a.tls_key;
  spool::serve::check_tls_options(options);  // before the database is opened
  if (!a.credentials.empty()) options.credentials = spool::serve::credential_store::load(a.credentials);
  // The SQS actions on the database; fails fast when it is unreachable or not migrated.
  spool::serve::sqs::service sqs(open_database(ctx), {.schema = a.schema});
  // The console: on loopback by default; beyond it only behind a token.
  std::unique_ptr<spool::serve::console::site> console;
  const auto token = console_token(a);
  if (!a.no_console && (loopback(hp.host) || !token.empty())) {
    spool::serve::console::site_options co;
    co.token = token;
    co.read_only = a.console_read_only;
    co.schema = a.schema;
    co.sample_interval = std::chrono::seconds(a.console_sample_seconds);
    console = std::make_unique<spool::serve::console::site>(open_database(ctx), std::move(co));
    options.console = [&console](const spool::serve::http_request& r) { return console->handle(r); };
  } else if (!a.no_console) {
    log().warn("spool serve: the console is off: listening beyond loopback needs --console-token or "
               "--console-token-file");
  }
  const auto actions = [&sqs](const spool::serve::sqs::request& r, const std::string& account,
                              const std::string& base_url) { return sqs.handle(r, account, base_url); };
  options.long_polls_waiting = [&sqs] { return sqs.long_polls_waiting(); };
  spool::serve::server server(std::move(options), actions);
  if (a.no_auth)
    log().warn("spool serve: --no-auth: every request is served unauthenticated (local development only)");
  std::thread runner([&server] { server.run(); });
  while (!server.running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::fprintf(stderr, "listening on %s\n", server.url().c_str());
  std::fflush(stderr);
  const int sig = signals.wait();
  log().info("spool serve: {} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  sqs.stop();  // waiting long polls return empty
  server.stop();
  runner.join();
}

}  // namespace

void add_serve_command(CLI::App& app, cli_context& ctx) {
  auto a = std::make_shared<serve_args>();
  auto* serve =
      app.add_subcommand("serve",
                         "Serve the SQS API (AWS JSON 1.0 and the query protocol) over the database, "
                         "for any AWS SDK pointed at http://HOST:PORT (https:// with --tls-cert/--tls-key). "
                         "SIGINT/SIGTERM stop it.");
  serve->add_option("--listen", a->listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  serve->add_option("--credentials", a->credentials,
                    "File of `ACCESS_KEY_ID SECRET_ACCESS_KEY [ACCOUNT]` lines; every request must be signed "
                    "with one (AWS Signature Version 4, service sqs, any region)");
  serve->add_flag("--no-auth", a->no_auth,
                  "Serve unsigned requests as account 000000000000 (local development)");
  serve->add_option("--tls-cert", a->tls_cert,
                    "PEM file of the certificate chain (the server's first): serve HTTPS; needs --tls-key");
  serve->add_option("--tls-key", a->tls_key, "PEM file of the certificate's private key (unencrypted)");
  serve->add_option("--schema", a->schema,
                    "PostgreSQL schema of the queue tables [default: current_schema()]");
  serve->add_option("--console-token", a->console_token,
                    "Require this token to log in to the console at /console/ (needed to serve it beyond loopback)");
  serve->add_option("--console-token-file", a->console_token_file,
                    "Read the console's token from the first line of this file");
  serve->add_flag("--console-read-only", a->console_read_only,
                  "Show the console without its actions (every action is refused)");
  serve->add_flag("--no-console", a->no_console, "Do not serve the console");
  serve->add_option("--console-sample-seconds", a->console_sample_seconds,
                    "How often the console samples the queues for its throughput charts")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  add_connection_options(*serve, ctx);
  serve->callback([&ctx, a] {
    ctx.takes_signals = true;
    ctx.action = [&ctx, a] { run_serve(ctx, *a); };
  });
}

}  // namespace spool::cli
