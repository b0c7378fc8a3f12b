// spool::outbox sinks (outbox.md §8): where a relay publishes claimed
// envelopes. A sink is called from up to max_in_flight relay threads at once.
// Shipped here: callback, stdout, JSON-lines file, command, HTTP webhook and
// the Spool message queue. Thread safety: every sink returned by the factories is safe
// to call from many threads; a user sink MUST be too.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "spool/call_options.hpp"
#include "spool/database.hpp"
#include "spool/outbox/store.hpp"

namespace spool::outbox {

enum class outcome_class { delivered, transient, permanent };
[[nodiscard]] std::string_view to_string(outcome_class c) noexcept;

// What a sink reports for one envelope (§7 rule 3). code is a failure code
// of 1..64 bytes of [a-z0-9_.] (the relay substitutes "sink_failed" for an
// invalid one); message never carries secrets or bodies (the store sanitises
// and cuts it anyway).
struct sink_outcome {
  outcome_class kind = outcome_class::delivered;
  std::string code;
  std::string message;
  std::optional<std::chrono::milliseconds> retry_after;  // transient only

  [[nodiscard]] static sink_outcome delivered() { return {}; }
  [[nodiscard]] static sink_outcome transient(
      std::string code, std::string message,
      std::optional<std::chrono::milliseconds> retry_after = std::nullopt) {
    return {outcome_class::transient, std::move(code), std::move(message), retry_after};
  }
  [[nodiscard]] static sink_outcome permanent(std::string code, std::string message) {
    return {outcome_class::permanent, std::move(code), std::move(message), std::nullopt};
  }
};

// Thrown by sink::record_delivered when the sink's own part of the
// transition failed and nothing committed: the relay records outcome() (a
// transient or permanent failure) instead of the delivery.
class sink_failed : public std::runtime_error {
 public:
  explicit sink_failed(sink_outcome outcome)
      : std::runtime_error(outcome.code + ": " + outcome.message), outcome_(std::move(outcome)) {}
  [[nodiscard]] const sink_outcome& outcome() const noexcept { return outcome_; }

 private:
  sink_outcome outcome_;
};

class sink {
 public:
  virtual ~sink() = default;

  // Publishes one claimed envelope (its counters are those after the claim).
  // stop is requested when the lease is lost or the relay shuts down; a
  // long-running sink MUST observe it. An exception counts as a transient
  // failure with code sink_threw (the relay contains it).
  virtual sink_outcome publish(const claimed_message& m, std::stop_token stop) = 0;

  // True when the sink's effect must commit inside the fenced transition
  // (the queue sink in the outbox's own database): the relay then records a
  // delivered outcome through record_delivered instead of
  // store::mark_delivered, and skips mark_delivered_and_claim_next.
  [[nodiscard]] virtual bool records_delivery() const noexcept { return false; }

  // Records a delivered outcome: by default store::mark_delivered(ref, c).
  // Errors: as store::mark_delivered (lease_lost rolls back everything), and
  // sink_failed for the sink's own part (nothing committed).
  virtual void record_delivered(store& s, const claimed_message& m, const call_options& c) {
    s.mark_delivered(m.ref, c);
  }

  // One row's result of record_delivered_batch: delivered (recorded), or
  // the sink's own part failed for it (failure set, nothing of the row
  // committed), or neither: its lease was lost.
  struct batch_record {
    bool delivered = false;
    std::optional<sink_outcome> failure;
  };
  // Records several delivered outcomes (1..1,000 rows, distinct), in as few
  // transactions as the sink can: the queue sink uses one. By default
  // record_delivered per row. Errors: unavailable and in_doubt (the relay
  // re-reads each row), and as store::mark_delivered_batch.
  virtual std::vector<batch_record> record_delivered_batch(store& s,
                                                           const std::vector<const claimed_message*>& rows,
                                                           const call_options& c);

  // Reopens output files (log rotation); a no-op for other sinks.
  virtual void reopen() {}
};

// The delivery document of §8 (one line, no trailing newline):
// {"envelope": <canonical JSON>, "claim_count": n, "failure_count": n,
// "available_at": "<UTC time>"}. Errors: invalid_argument when the envelope
// has no created_at (never for a claimed envelope).
[[nodiscard]] std::string delivery_document(const claimed_message& m);

// A callable from the library user; its exceptions become sink_threw.
using sink_callback = std::function<sink_outcome(const claimed_message&, std::stop_token)>;
// Errors: invalid_argument (sink_required) when fn is empty.
[[nodiscard]] std::shared_ptr<sink> make_callback_sink(sink_callback fn);

// One delivery document per line on the process's stdout; lines never
// interleave (one write under a process-wide lock); write errors transient.
[[nodiscard]] std::shared_ptr<sink> make_stdout_sink();

struct file_sink_options {
  std::string path;
  bool fsync = true;  // fsync before reporting delivered
};
// Appends one delivery document per line; lines never interleave; write and
// fsync errors are transient (code file_write_failed). reopen() closes and
// reopens the path (after a rotation). Errors at construction:
// invalid_argument (empty path), unavailable when the file cannot be opened.
[[nodiscard]] std::shared_ptr<sink> make_file_sink(file_sink_options options);

struct command_sink_options {
  std::vector<std::string> argv;  // argv[0] looked up in PATH; no shell
  std::set<int> permanent_exit_codes{65};
  std::chrono::milliseconds timeout{30000};              // then SIGTERM
  std::chrono::milliseconds kill_grace{5000};            // then SIGKILL
  std::vector<std::pair<std::string, std::string>> env;  // added to the inherited environment
};
// Runs argv per envelope in its own process group: the delivery document on
// stdin (then closed), SPOOL_OUTBOX_ID, SPOOL_OUTBOX_TOPIC,
// SPOOL_OUTBOX_CLAIM_COUNT and SPOOL_OUTBOX_FAILURE_COUNT in its environment,
// its stdout sent to our stderr. Exit 0: delivered; an exit in
// permanent_exit_codes: permanent (code exit_N); other exits (exit_N),
// signals (signal_N), the timeout (timeout) and a stop request (stopped):
// transient. The message is the first KiB of its stderr, sanitised.
// Errors at construction: invalid_argument (empty argv, non-positive timeout,
// negative kill_grace).
[[nodiscard]] std::shared_ptr<sink> make_command_sink(command_sink_options options);

struct http_sink_options {
  std::string url;     // http://HOST[:PORT][/PATH[?QUERY]] or https://…; no user:password@
  std::string secret;  // the HMAC-SHA256 key of X-Spool-Signature; never logged
  // Sent with every request; they cannot replace the sink's own headers
  // (Content-Type, Content-Length, Host, Connection, Transfer-Encoding,
  // Idempotency-Key, X-Spool-*, webhook-*). A User-Agent here replaces the default.
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds connect_timeout{10000};  // TCP connect (and TLS handshake)
  std::chrono::milliseconds read_timeout{30000};     // each read or write of the exchange
  std::string ca_file;                               // PEM CA(s) trusted in addition to the system's
  bool verify_tls = true;  // https: verify the chain and the host name (off: only for tests)
  std::size_t max_response_bytes = std::size_t{64} * 1024;  // the response body read (and discarded) at most
  // Non-empty: also sign every request the Standard Webhooks way
  // (spool/outbox/webhook.hpp), one signature per secret for rotation.
  std::vector<std::string> standard_webhook_secrets;
};
// POSTs the envelope's canonical JSON (outbox.md §8) with Content-Type
// application/json, Idempotency-Key (the envelope id), X-Spool-Topic,
// X-Spool-Claim-Count, X-Spool-Failure-Count and X-Spool-Signature:
// sha256=<lowercase hex HMAC-SHA256 of the exact body bytes under secret>;
// with standard_webhook_secrets also webhook-id (the envelope id),
// webhook-timestamp and webhook-signature (spool/outbox/webhook.hpp).
// 2xx: delivered. 4xx except 408 and 429: permanent (code http_N). Other
// statuses, redirects (never followed), connection, TLS and timeout errors:
// transient (http_N, http_connect, http_read, http_tls_verify, …); a Retry-After
// (delta-seconds or HTTP date) on a transient status becomes retry_after.
// The failure message is the status code and reason phrase (or the failing
// step and host:port), never the secret, the URL's path or a body.
// A stop request aborts the exchange in flight: the request runs on a
// thread of its own and the caller shuts its socket down (it waits at most
// connect_timeout when the stop lands during the connect or TLS handshake);
// the outcome is then transient (http_stopped). One connection and one
// thread per publish, no keep-alive: concurrent publishes share nothing.
// Errors at construction: invalid_argument (invalid_config) naming the value:
// a URL that is not http(s) or is malformed, an empty secret, non-positive
// timeouts, a zero max_response_bytes, an invalid or reserved header, a
// ca_file that cannot be loaded, or an empty or malformed (whsec_ but not
// base64) Standard Webhooks secret.
[[nodiscard]] std::shared_ptr<sink> make_http_sink(http_sink_options options);

struct mq_sink_options {
  std::string queue;                                // default queue
  std::map<std::string, std::string> topic_queues;  // topic → queue, before `queue`
  std::string schema;                               // the queue tables' schema (PostgreSQL)
  // The queue table lives in the outbox's database: insert inside the fenced
  // mark_delivered transaction (§8), so a lost lease rolls back both.
  bool same_database = true;
  bool notify = false;  // PostgreSQL: NOTIFY spool_mq for the queue written
};
// Publishes the payload, decoded as a queue message (message-queue.md §3;
// else permanent, code sink_rejected), through spool::mq::insert_batch. A
// non-empty ordering key sets messageGroupId (overriding the payload's); an
// empty message id becomes the envelope id, so a redelivery meets the
// existing row (already_present counts as delivered). A topic with no queue
// is permanent (sink_rejected). Database errors are transient (mq_failed).
// db is the queue's database (a handle of the same database when
// same_database). Errors at construction: invalid_argument (no queue and no
// topic_queues).
[[nodiscard]] std::shared_ptr<sink> make_mq_sink(database db, mq_sink_options options);

}  // namespace spool::outbox
