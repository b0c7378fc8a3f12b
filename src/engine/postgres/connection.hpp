// A thin RAII layer over one libpq connection: bound parameters only, every
// failure translated to spool::error in one place (errors.cpp).
// Thread safety: one thread at a time (the pool hands it out exclusively).
#pragma once

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spool/call_options.hpp"
#include "spool/database.hpp"

namespace spool {
class error;
}

namespace spool::pg::detail {

struct text_params;

// What a statement may have done, which decides how a lost connection is
// reported: a read that never completed did nothing (unavailable); a write
// may have committed (in_doubt).
enum class intent { read, write };

// Which parameters of a statement are sent in binary format: bit i for
// parameter i (the first 32 only). Each must be a std::string holding the
// value's binary form (binary_text_array).
using binary_mask = std::uint32_t;

struct result_deleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

class connection {
 public:
  // Connects (blocking, bounded by connect_timeout). conninfo is a URI or a
  // key/value string. Errors: unavailable, naming the redacted target.
  connection(const std::string& conninfo, const std::string& display, int connect_timeout_s);
  // Borrows an application's connection; it is never closed by Spool.
  explicit connection(PGconn* borrowed);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  [[nodiscard]] PGconn* native() const noexcept { return conn_; }
  // Usable for the next call: connected, not given up after an unanswered
  // cancel (wait_until_ready), and not left in pipeline mode.
  [[nodiscard]] bool healthy() const noexcept {
    return conn_ && !given_up_ && PQstatus(conn_) == CONNECTION_OK &&
           PQpipelineStatus(conn_) == PQ_PIPELINE_OFF;
  }
  // A cancel this connection sent has not been answered yet: reused now, the
  // connection's next statement could be the one it cancels (the pool does
  // not reuse it; a call on it waits for the cancel first).
  [[nodiscard]] bool cancel_outstanding() const noexcept { return cancel_done_ && !cancel_done_->load(); }
  // Inside a transaction block: begun, failed, or opened lazily (below).
  [[nodiscard]] bool in_transaction() const noexcept;

  // Opens a transaction block lazily: `opening` (BEGIN and perhaps SET LOCAL
  // statements, without parameters) goes out ahead of the next statement, in
  // the same round trip, instead of costing one of its own. Until then
  // nothing was sent and in_transaction() is true. Whatever call sends next
  // (exec, query, pipeline, exec_script) sends the opening first and reports
  // its failures as its own, except that a lost connection is unavailable
  // (nothing in a block that began in that round trip can have committed).
  // A statement not prepared yet on this connection is prepared inside the
  // block (the opening then goes out on its own first), so a statement that
  // fails to parse aborts the block, as it would in an eager one.
  void open_lazily(std::vector<std::string> opening) { opening_ = std::move(opening); }
  // The block was opened lazily and nothing has been sent in it yet: ending
  // it needs no round trip (forget_opening).
  [[nodiscard]] bool opening_pending() const noexcept { return !opening_.empty(); }
  void forget_opening() noexcept { opening_.clear(); }
  // True when the session's client_encoding is UTF8 (libpq tracks it from
  // the server's ParameterStatus, so a SET is seen too).
  [[nodiscard]] bool client_utf8() const noexcept {
    return conn_ != nullptr && std::string_view(pg_encoding_to_char(PQclientEncoding(conn_))) == "UTF8";
  }

  // Runs one statement with text parameters; returns the result on success,
  // throws spool::error otherwise.
  // With limits, the statement is sent asynchronously and cancelled when the
  // deadline passes or the stop token fires (see spool::call_options).
  // binary: the parameters sent in binary format (binary_text_array).
  result_ptr exec(std::string_view sql, const std::vector<param>& params, intent what,
                  const call_options& limits = {}, binary_mask binary = 0);
  // exec, then every row as text.
  std::vector<row> query(std::string_view sql, const std::vector<param>& params, intent what,
                         const call_options& limits = {}, binary_mask binary = 0);
  // Sends every statement in one round trip (libpq pipeline mode) as one
  // implicit transaction: all of them take effect or none. Returns each
  // statement's result; throws for the first failure. Statements may also
  // open and commit an explicit transaction (BEGIN … COMMIT): after a
  // failure that one is left aborted, and the caller must roll it back.
  struct statement {
    std::string_view sql;
    std::vector<param> params;
    binary_mask binary = 0;
  };
  std::vector<result_ptr> pipeline(const std::vector<statement>& statements, intent what,
                                   const call_options& limits = {});
  // Simple-query protocol, for migrations (several statements, no parameters).
  void exec_script(const std::string& sql);

 private:
  // Runs sql as a named prepared statement, preparing it on first use, so
  // the hot statements are parsed and planned once per connection.
  PGresult* exec_prepared(const std::string& sql, const text_params& p);
  // The prepared statement's name (preparing it now), or nullptr when the
  // cache is full. Throws when preparing fails. With limits the preparation
  // is awaited as a statement is (wait_until_ready), so a server that does
  // not answer cannot hold the call past its deadline.
  const std::string* prepare_cached(const std::string& sql, int n, intent what,
                                    const call_options& limits = {});
  // Waits until a result can be read without blocking, cancelling the
  // running statement once (cancelled_for names why) when the limits end.
  // A server that answers neither the statement nor the cancel within
  // cancel_grace after it (a stopped backend, a lost network) loses the
  // connection: its socket is shut down, the connection is unhealthy from
  // then on (the pool drops it), and the call fails as in_doubt for a write,
  // unavailable for a read, with the limit's reason.
  void wait_until_ready(const call_options& limits, std::string_view& cancelled_for, intent what);
  // Before a statement: waits out a cancel still on its way (at most
  // cancel_grace, then the connection is given up), then throws unavailable
  // (connection_lost) unless the connection is healthy.
  void ready_for_next();
  // Throws for a failed result: a statement this connection cancelled at a
  // limit (cancelled_for names it) is in_doubt for a write, unavailable for
  // a read; anything else goes through throw_error.
  [[noreturn]] void throw_failure(const PGresult* res, intent what, std::string_view cancelled_for,
                                  std::string_view context);
  static constexpr std::size_t max_prepared = 64;  // the prepared-statement cache's bound
  std::string with_opening(const std::string& sql);
  // pipeline's work; the first `opening` statements are the pending opening,
  // forgotten once pipeline mode is entered (nothing is sent before that).
  std::vector<result_ptr> send_pipeline(const std::vector<statement>& statements, intent what,
                                        const call_options& limits, std::size_t opening);
  // Sends without blocking and waits, cancelling the statement at the limit.
  result_ptr exec_limited(const std::string& sql, const text_params& p, intent what,
                          const call_options& limits);

  PGconn* conn_ = nullptr;
  bool owned_ = true;
  // When this call's cancel was sent: a pipeline waits for several results
  // after one cancel, and the grace runs from the cancel, not per result.
  std::chrono::steady_clock::time_point cancelled_at_{};
  bool given_up_ = false;                                  // its socket was shut down: never used again
  std::shared_ptr<std::atomic<bool>> cancel_done_;         // the last cancel sent: answered yet?
  std::unordered_map<std::string, std::string> prepared_;  // sql → statement name
  std::string display_;
  std::vector<std::string> opening_;  // open_lazily: not sent yet
};

// Converts a result's rows to text rows.
std::vector<row> rows_of(const PGresult* res);

// The one place where libpq and SQLSTATE failures become spool::error.
[[noreturn]] void throw_error(PGconn* conn, const PGresult* res, intent what, std::string_view context);
// A connection attempt that failed, with libpq's message: unauthorized
// (tls_verify_failed) when the server's certificate did not verify or did
// not name the host, unauthorized (tls_refused) when TLS was required and the
// server offers none, else unavailable (connect_failed). display names the
// target (redacted).
[[noreturn]] void throw_connect_error(const std::string& display, std::string libpq_message);

// A statement refused for a duplicate key (SQLSTATE 23505, as errors.cpp
// translates it): how a caller that tried an insert without ON CONFLICT
// tells "taken" from any other failure.
[[nodiscard]] bool is_unique_violation(const spool::error& e) noexcept;

}  // namespace spool::pg::detail
