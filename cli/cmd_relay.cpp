// `spool relay`: runs an outbox relay (outbox.md §7) with one of the shipped
// sinks (§8): stdout, file:PATH, exec:CMD (CMD split into argv by shell word
// rules, no shell run), http:URL (the webhook; cli/webhook_options.cpp) or
// mq:QUEUE (the queue table in the same database).
// SIGINT/SIGTERM stop it gracefully (rule 10); SIGHUP reopens a file sink.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <stdexcept>

#include "common.hpp"
#include "logging.hpp"
#include "metrics_server.hpp"
#include "progress.hpp"
#include "signal_scope.hpp"
#include "spool/outbox/relay.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/outbox/store.hpp"
#include "webhook_options.hpp"

namespace spool::cli {

namespace {

struct relay_args {
  std::string sink, serialization = "none", schema, table = "outbox_messages", owner;
  int concurrency = 16;
  std::size_t batch = 0;  // --batch: envelopes per claim (0: --concurrency)
  std::string lease, poll_interval, shutdown_grace;
  std::uint32_t max_attempts = 25;
  webhook_flags webhook;
  std::string metrics_addr;  // --metrics-addr (operability block in run_relay)
};

// Splits CMD into words by shell rules: blanks separate words; '…' is literal;
// "…" keeps blanks and honours \" \\ \$ \`; a backslash outside quotes escapes
// the next character. Nothing is expanded. Errors: an unterminated quote.
std::vector<std::string> split_words(std::string_view cmd) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < cmd.size(); ++i) {
    const char c = cmd[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const auto end = cmd.find('\'', i + 1);
      if (end == std::string_view::npos) usage("--sink exec: unterminated single quote");
      word.append(cmd.substr(i + 1, end - i - 1));
      i = end;
      in_word = true;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < cmd.size() && cmd[j] != '"'; ++j) {
        if (cmd[j] == '\\' && j + 1 < cmd.size() &&
            std::string_view("\"\\$`").find(cmd[j + 1]) != std::string_view::npos) {
          ++j;
        }
        word += cmd[j];
      }
      if (j >= cmd.size()) usage("--sink exec: unterminated double quote");
      i = j;
      in_word = true;
    } else if (c == '\\' && i + 1 < cmd.size()) {
      word += cmd[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

std::shared_ptr<spool::outbox::sink> make_sink(const std::string& spec, spool::database& db,
                                               const relay_args& a, bool notify) {
  using namespace spool::outbox;
  const auto& w = a.webhook;
  if (!spec.starts_with("http:") && (!w.secret_file.empty() || !w.standard_secrets_file.empty() ||
                                     !w.ca_file.empty() || !w.timeout.empty() || !w.headers.empty())) {
    usage(fmt::format(
        "--secret-file, --standard-webhooks-secrets, --ca-file, --http-timeout and --header apply to "
        "--sink http:URL only, "
        "not to --sink {}",
        spec));
  }
  if (spec == "stdout") return make_stdout_sink();
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon),
                    rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "file" && !rest.empty()) {
    file_sink_options o;
    o.path = rest;
    return make_file_sink(o);
  }
  if (kind == "exec" && !rest.empty()) {
    command_sink_options o;
    o.argv = split_words(rest);
    if (o.argv.empty()) usage("--sink exec: empty command");
    return make_command_sink(o);
  }
  if (kind == "mq" && !rest.empty()) {
    mq_sink_options o;
    o.queue = rest;
    o.schema = a.schema;
    o.notify = notify;
    return make_mq_sink(db, o);
  }
  if (kind == "http" && !rest.empty()) return make_http_sink(webhook_options(rest, a.webhook));
  usage(fmt::format("--sink {}: expected stdout, file:PATH, exec:CMD, http:URL or mq:QUEUE", spec));
}

// A scrape's database reads give up after this, so a slow database cannot pile up scrapes.

// /healthz: healthy while the relay runs and its last store call succeeded.
// An open breaker (the sink is down) is reported but is not unhealthy:
// restarting the relay would not bring the sink back.
health_report relay_health_report(const spool::outbox::relay_health& h, bool details) {
  const bool ok = h.running && h.store_ok;
  ojson body{{"status", ok ? "ok" : (h.running ? "store failing" : "not running")},
             {"running", h.running},
             {"store_ok", h.store_ok},
             {"sink_ok", h.sink_ok},
             {"breaker", std::string(spool::outbox::to_string(h.breaker))}};
  if (details) {
    body["last_store_error"] = h.last_store_error;
    body["last_sink_error"] = h.last_sink_error;
  }
  return {ok, body.dump(-1, ' ', false, ojson::error_handler_t::replace)};
}

void run_relay(cli_context& ctx, const relay_args& a) {
  using namespace spool::outbox;
  signal_scope signals({SIGINT, SIGTERM, SIGHUP});
  // A connection for each sink call (one recording its own row), each of up
  // to four claim rounds and four batched records, the lease renewer, and a
  // spare: the default pool of 8 is fewer than that already at
  // --concurrency 4 --batch 100.
  spool::database db = open_database(ctx, static_cast<std::size_t>(a.concurrency) + 10);
  store_options so;
  so.config.schema = a.schema;
  so.config.table = a.table;
  so.max_claim_batch = std::max(so.max_claim_batch, a.batch);
  store st(db, so);  // connects and checks the schema: fail fast
  relay_options ro;
  if (!a.owner.empty()) ro.owner = a.owner;
  ro.max_in_flight = static_cast<std::size_t>(a.concurrency);
  if (a.batch > 0) {
    // --concurrency sink calls with a claim's worth queued behind each claim
    // round the relay may run at once (one per sink call, at most four;
    // never fewer than two claims' worth): a fast sink is never starved
    // between claims, deliveries are recorded together, and a stop has at
    // most that much to release. With two claims' worth only, the relay ran
    // two claim rounds at a time whatever --concurrency said.
    ro.sink_concurrency = ro.max_in_flight;
    ro.claim_batch = a.batch;
    const std::size_t rounds = std::clamp<std::size_t>(ro.sink_concurrency, 2, 4);
    ro.max_in_flight = ro.sink_concurrency + rounds * a.batch;
  }
  ro.max_attempts = a.max_attempts;
  ro.notify = ctx.notify;
  ro.max_claims = std::max<std::uint32_t>(ro.max_claims, a.max_attempts);
  if (a.serialization == "key") {
    ro.mode = serialization::by_ordering_key;
  } else if (a.serialization == "topic") {
    ro.mode = serialization::by_topic;
  } else if (a.serialization != "none") {
    usage(fmt::format("--serialization {}: expected none, key or topic", a.serialization));
  }
  if (!a.lease.empty()) ro.lease_duration = parse_duration(a.lease, "--lease");
  if (!a.poll_interval.empty()) ro.poll_interval = parse_duration(a.poll_interval, "--poll-interval");
  if (!a.shutdown_grace.empty()) ro.shutdown_grace = parse_duration(a.shutdown_grace, "--shutdown-grace");
  auto sink = make_sink(a.sink, db, a, ctx.notify);
  relay r(st, sink, ro);

  // Operability: the --metrics-addr endpoint and the progress line (both stop before the summary).
  using namespace spool::prometheus;
  const auto scrape = [&] {
    text_writer w;
    write(w, r.metrics(), {{"owner", r.owner()}, {"table", a.table}});
    write(w, db.listener(), {});
    const labels table{{"table", a.table}};
    write_backlog(w, table, [&] {
      write(w, st.backlog(spool::call_options::within(backlog_budget)), table);
      // Only ordered claims wait for the horizon: a long transaction holding
      // every keyed row back shows here before the backlog grows.
      if (ro.mode != serialization::none)
        write(w, st.horizon(spool::call_options::within(backlog_budget)), table);
    });
    return w.str();
  };
  auto server = serve_metrics(a.metrics_addr, {.metrics = scrape, .health = [&](bool details) {
                                                 return relay_health_report(r.health(), details);
                                               }});
  // The stdout sink writes its documents to the terminal: a status line would tangle with them.
  const bool show_progress = progress_wanted(ctx.json) && a.sink != "stdout";
  auto ticker = std::make_unique<progress_ticker>(show_progress, "relay", [&r] {
    const auto m = r.metrics();
    return std::vector<progress_count>{{"delivered", m.delivered},
                                       {"retried", m.retried},
                                       {"dead-lettered", m.dead_lettered},
                                       {"in flight", static_cast<std::uint64_t>(m.in_flight)}};
  });

  r.start();
  log().info("relay: started, owner {}, table {}", r.owner(), a.table);
  int sig = 0;
  for (;;) {
    sig = signals.wait();
    if (sig != SIGHUP) break;
    log().info("relay: SIGHUP received, reopening the sink");
    sink->reopen();
  }
  log().info("relay: {} received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  r.stop();
  ticker.reset();
  server.reset();
  const auto m = r.metrics();
  const char* by = sig == SIGINT ? "SIGINT" : "SIGTERM";
  // With the stdout sink, stdout carries the delivery documents: the summary goes to stderr.
  const bool summary_to_stderr = a.sink == "stdout";
  std::string line;
  if (ctx.json) {
    line = ojson{{"owner", r.owner()},
                 {"stopped_by", by},
                 {"claimed", m.claimed},
                 {"delivered", m.delivered},
                 {"retried", m.retried},
                 {"dead_lettered", m.dead_lettered},
                 {"released", m.released},
                 {"lease_lost", m.lease_lost},
                 {"store_errors", m.store_errors},
                 {"delivery_unrecorded", m.delivery_unrecorded}}
               .dump();
  } else {
    line = fmt::format(
        "stopped by {}: claimed {}, delivered {}, retried {}, dead-lettered {}, released {}, lease lost "
        "{}, store errors {}",
        by, m.claimed, m.delivered, m.retried, m.dead_lettered, m.released, m.lease_lost, m.store_errors);
  }
  if (summary_to_stderr) {
    std::fprintf(stderr, "%s\n", line.c_str());
  } else {
    emit_line(ctx, line);
  }
}

}  // namespace

void add_relay_command(CLI::App& app, cli_context& ctx) {
  auto a = std::make_shared<relay_args>();
  auto* cmd = app.add_subcommand(
      "relay",
      "Run an outbox relay: claim committed envelopes, publish each through the sink and record the outcome. "
      "Sinks: stdout and file:PATH write one delivery document per line; exec:CMD runs CMD (split into words "
      "like a "
      "shell, no shell run) with the document on stdin and SPOOL_OUTBOX_ID/TOPIC/CLAIM_COUNT/FAILURE_COUNT "
      "in its "
      "environment (exit 0 delivered, 65 permanent, else retried); http:URL POSTs the envelope's canonical "
      "JSON to an http:// or https:// URL with Idempotency-Key, X-Spool-Topic, X-Spool-Claim-Count, "
      "X-Spool-Failure-Count and X-Spool-Signature: sha256=<hex HMAC-SHA256 of the body> (2xx delivered; "
      "4xx but 408/429 dead-lettered; anything else, redirects, connection, TLS and timeout errors "
      "retried, honouring Retry-After); mq:QUEUE publishes into the Spool queue "
      "QUEUE "
      "in the same transaction as the delivery. SIGINT/SIGTERM stop gracefully (unpublished rows are "
      "released); "
      "SIGHUP reopens a file sink.");
  cmd->footer(
      "--json prints one summary when it stops (to stderr with --sink stdout): {\"owner\",\"stopped_by\","
      "\"claimed\",\"delivered\",\"retried\",\"dead_lettered\",\"released\",\"lease_lost\",\"store_errors\","
      "\"delivery_unrecorded\"}");
  cmd->add_option("--sink", a->sink, "stdout | file:PATH | exec:CMD | http:URL | mq:QUEUE")->required();
  cmd->add_option("--serialization", a->serialization, "none | key (by ordering key) | topic")
      ->capture_default_str();
  cmd->add_option("--concurrency", a->concurrency,
                  "Sink calls at once (without --batch: also the envelopes leased)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--batch", a->batch,
                  "Envelopes claimed at once (default: min(--concurrency, 100)); up to --concurrency + K × N "
                  "leases are held, K = --concurrency within 2..4 (the claims run at once), and "
                  "deliveries are recorded together")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--owner", a->owner, "Lease owner [default: <host>:<pid>:<8 hex>]");
  cmd->add_option("--max-attempts", a->max_attempts, "Failures before dead-lettering")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--lease", a->lease, "Lease duration [default: 30s]");
  cmd->add_option("--poll-interval", a->poll_interval, "Poll period when idle [default: 1s]");
  cmd->add_option("--shutdown-grace", a->shutdown_grace, "Graceful stop: wait this long [default: 10s]");
  cmd->add_option("--secret-file", a->webhook.secret_file,
                  "http: the signing secret, read from PATH (one trailing newline dropped) "
                  "[default: $SPOOL_WEBHOOK_SECRET]");
  cmd->add_option("--standard-webhooks-secrets", a->webhook.standard_secrets_file,
                  "http: also sign the Standard Webhooks way (webhook-id, webhook-timestamp, "
                  "webhook-signature) with each secret of PATH, one per line (whsec_<base64> or any text); "
                  "several lines sign with each, for rotation");
  cmd->add_option("--ca-file", a->webhook.ca_file, "http: a PEM CA trusted besides the system's");
  cmd->add_option("--http-timeout", a->webhook.timeout,
                  "http: read/write timeout of a request (connect: at most 10s) [default: 30s]");
  cmd->add_option("--header", a->webhook.headers, "http: 'Name: value' sent with every request (repeatable)");
  cmd->add_option("--schema", a->schema, "PostgreSQL schema of the outbox [default: current_schema()]");
  cmd->add_option("--outbox-table", a->table, "The outbox table [default: outbox_messages]");
  add_metrics_option(*cmd, a->metrics_addr);
  add_notify_option(*cmd, ctx);
  add_connection_options(*cmd, ctx);
  cmd->callback([&ctx, a] {
    ctx.takes_signals = true;
    ctx.action = [&ctx, a] { run_relay(ctx, *a); };
  });
}

}  // namespace spool::cli
