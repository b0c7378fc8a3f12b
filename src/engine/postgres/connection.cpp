#include "engine/postgres/connection.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <memory>
#include <system_error>
#include <thread>

#include "common/call_guard.hpp"
#include "common/text/utf8.hpp"
#include "spool/error.hpp"

namespace spool::pg::detail {

namespace {

// How long a cancelled statement may take to end before the connection is
// given up: a server that answers a cancel ends the statement in
// milliseconds, so a call with a deadline returns about this much after it.
constexpr auto cancel_grace = std::chrono::milliseconds(1000);

// Asks the server to cancel the connection's running statement, without
// waiting for it. PQcancel blocks until the postmaster has read the request
// and closed its socket, with no timeout: a stopped postmaster or a lost
// network would hold the call for minutes. So the request goes out from a
// thread of its own, which owns its PGcancel and ends when the request is
// answered or the kernel gives the socket up; the caller's wait stays
// bounded by cancel_grace.
// done turns true once the request was answered (or could not be sent).
void send_cancel(PGconn* conn, const std::shared_ptr<std::atomic<bool>>& done) {
  PGcancel* c = PQgetCancel(conn);
  if (c == nullptr) {
    done->store(true);
    return;
  }
  try {
    std::thread([c, done] {
      char err[256];
      (void)PQcancel(c, err, sizeof err);
      PQfreeCancel(c);
      done->store(true);
    }).detach();
  } catch (const std::system_error&) {
    PQfreeCancel(c);  // no thread to be had: the grace period still ends the wait
    done->store(true);
  }
}

}  // namespace

connection::connection(const std::string& conninfo, const std::string& display, int connect_timeout_s)
    : display_(display) {
  // Our defaults come first so that settings in the caller's URI override
  // them. The idle-in-transaction timeout keeps a crashed caller from holding
  // locks (and a snapshot) forever on Spool's own connections. Keepalives
  // and tcp_user_timeout let the kernel notice a peer that vanished (a
  // partition, a dead host) within about 30 s, where TCP alone waits for
  // minutes; calls with a deadline are bounded sooner (wait_until_ready).
  const std::string timeout = std::to_string(connect_timeout_s);
  const char* keys[] = {"connect_timeout",  "keepalives",
                        "keepalives_idle",  "keepalives_interval",
                        "keepalives_count", "tcp_user_timeout",
                        "options",          "application_name",
                        "dbname",           nullptr};
  const char* values[] = {timeout.c_str(),
                          "1",
                          "15",
                          "5",
                          "3",
                          "30000",
                          "-c idle_in_transaction_session_timeout=600000",
                          "spool",
                          conninfo.c_str(),
                          nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn_ == nullptr) throw error(errc::unavailable, "out of memory connecting to " + display_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn_);
    PQfinish(conn_);
    conn_ = nullptr;
    throw_connect_error(display_, std::move(msg));
  }
  // Server notices ("relation already exists, skipping") are not errors; keep
  // them off the application's stderr.
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  // The mq and ops claims are single statements that rely on READ COMMITTED
  // (each sees the rows committed before it, and SKIP LOCKED skips the rest);
  // under a database default of REPEATABLE READ or SERIALIZABLE they would
  // fail with serialization errors under concurrency. Set here, not in the
  // options above, because a URI's own `options` replaces those.
  PGresult* set = PQexec(conn_, "SET default_transaction_isolation = 'read committed'");
  const bool ok = set != nullptr && PQresultStatus(set) == PGRES_COMMAND_OK;
  std::string msg = ok ? "" : PQerrorMessage(conn_);
  PQclear(set);
  if (!ok) {
    PQfinish(conn_);
    conn_ = nullptr;
    throw error(errc::unavailable, fmt::format("cannot set up the connection to {}: {}", display_, msg),
                "connect_failed");
  }
}

connection::connection(PGconn* borrowed) : conn_(borrowed), owned_(false), display_("adopted connection") {}

connection::~connection() {
  if (owned_ && conn_ != nullptr) PQfinish(conn_);
}

bool connection::in_transaction() const noexcept {
  if (opening_pending()) return true;
  const auto s = PQtransactionStatus(conn_);
  return s == PQTRANS_INTRANS || s == PQTRANS_INERROR;
}

namespace {

std::string to_text(const param& p, bool& is_null) {
  is_null = false;
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          is_null = true;
          return {};
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return fmt::format("{}", v);
        } else {
          return v;
        }
      },
      p);
}

}  // namespace

// Parameters as libpq wants them: text, NULL as a null pointer.
struct text_params {
  // utf8: the connection's client_encoding is UTF8, so the server would
  // refuse ill-formed UTF-8 anyway (SQLSTATE 22021, aborting the caller's
  // transaction): refuse it here, typed, before anything is sent.
  // binary: bit i set sends parameter i as it is, in binary format (a
  // binary_text_array, whose values were checked when it was built).
  text_params(const std::vector<param>& params, bool utf8, binary_mask binary = 0)
      : texts(params.size()), ptrs(params.size()) {
    if (binary != 0) {
      lengths.assign(params.size(), 0);
      formats.assign(params.size(), 0);
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (i < 32 && (binary >> i & 1U) != 0) {
        const auto* bytes = std::get_if<std::string>(&params[i]);
        if (bytes == nullptr)
          throw error(errc::invalid_argument, "a binary statement parameter is not a byte string",
                      "binary_param");
        ptrs[i] = bytes->data();
        lengths[i] = static_cast<int>(bytes->size());
        formats[i] = 1;
        continue;
      }
      bool is_null = false;
      texts[i] = to_text(params[i], is_null);
      // libpq reads a text parameter up to its first NUL: a value with an
      // embedded NUL would reach the server cut short and could match or
      // store a different value. PostgreSQL text cannot hold U+0000 anyway,
      // so refuse it before anything is sent.
      if (!is_null && texts[i].find('\0') != std::string::npos) {
        throw error(
            errc::invalid_argument,
            fmt::format("statement parameter ${} contains a NUL byte, which PostgreSQL text cannot store",
                        i + 1),
            "nul_in_text");
      }
      if (!is_null && utf8 && !spool::detail::is_utf8(texts[i])) {
        throw error(
            errc::invalid_argument,
            fmt::format("statement parameter ${} is not valid UTF-8 (the connection's client_encoding)",
                        i + 1),
            "invalid_encoding");
      }
      ptrs[i] = is_null ? nullptr : texts[i].c_str();
    }
  }
  [[nodiscard]] const int* length_ptr() const noexcept { return lengths.empty() ? nullptr : lengths.data(); }
  [[nodiscard]] const int* format_ptr() const noexcept { return formats.empty() ? nullptr : formats.data(); }

  std::vector<std::string> texts;
  std::vector<const char*> ptrs;
  std::vector<int> lengths;  // empty when every parameter is text
  std::vector<int> formats;
};

void connection::ready_for_next() {
  // A cancel from an earlier statement may still be on its way (it goes out
  // from a thread of its own): arriving during this statement, it would
  // cancel it. Once it was answered, the backend got it while idle, where a
  // cancel is ignored. One that stays unanswered gives the connection up.
  if (cancel_outstanding()) {
    const auto until = std::chrono::steady_clock::now() + cancel_grace;
    while (cancel_outstanding() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (cancel_outstanding()) {
      given_up_ = true;
      ::shutdown(PQsocket(conn_), SHUT_RDWR);
    }
  }
  if (!healthy()) {
    throw error(errc::unavailable, fmt::format("connection to {} is not usable", display_),
                "connection_lost");
  }
}

result_ptr connection::exec(std::string_view sql, const std::vector<param>& params, intent what,
                            const call_options& limits, binary_mask binary) {
  if (opening_pending()) {  // the opening and this statement in one round trip
    auto results = pipeline({{sql, params, binary}}, what, limits);
    return std::move(results.front());
  }
  ready_for_next();
  const text_params p(params, client_utf8(), binary);
  if (limits.limited()) return exec_limited(std::string(sql), p, what, limits);
  result_ptr res(exec_prepared(std::string(sql), p));
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return res;
  throw_error(conn_, res.get(), what, "statement");
}

PGresult* connection::exec_prepared(const std::string& sql, const text_params& p) {
  // Ad-hoc statements (an application's tx.exec) beyond the cache's bound run
  // unnamed, so a long-lived connection cannot accumulate statements forever.
  const int n = static_cast<int>(p.ptrs.size());
  const std::string* name = prepare_cached(sql, n, intent::read);
  if (name == nullptr)
    return PQexecParams(conn_, sql.c_str(), n, nullptr, p.ptrs.data(), p.length_ptr(), p.format_ptr(), 0);
  return PQexecPrepared(conn_, name->c_str(), n, p.ptrs.data(), p.length_ptr(), p.format_ptr(), 0);
}

const std::string* connection::prepare_cached(const std::string& sql, int n, intent what,
                                              const call_options& limits) {
  // A borrowed connection belongs to the application: Spool leaves no named
  // statements on it (another wrapper of the same PGconn would collide with
  // them), so its statements run unnamed.
  if (!owned_) return nullptr;
  auto it = prepared_.find(sql);
  if (it != prepared_.end()) return &it->second;
  if (prepared_.size() >= max_prepared) return nullptr;
  std::string name = "spool_" + std::to_string(prepared_.size());
  (void)what;  // preparing changes nothing: its failures are reads
  if (!limits.limited()) {
    result_ptr prep(PQprepare(conn_, name.c_str(), sql.c_str(), n, nullptr));
    if (!prep || PQresultStatus(prep.get()) != PGRES_COMMAND_OK)
      throw_error(conn_, prep.get(), intent::read, "prepare");
    return &prepared_.emplace(sql, std::move(name)).first->second;
  }
  if (PQsendPrepare(conn_, name.c_str(), sql.c_str(), n, nullptr) != 1)
    throw_error(conn_, nullptr, intent::read, "prepare");
  std::string_view cancelled_for;
  wait_until_ready(limits, cancelled_for, intent::read);
  result_ptr prep(PQgetResult(conn_));
  while (PGresult* rest = PQgetResult(conn_)) PQclear(rest);
  if (!prep || PQresultStatus(prep.get()) != PGRES_COMMAND_OK)
    throw_failure(prep.get(), intent::read, cancelled_for, "prepare");
  return &prepared_.emplace(sql, std::move(name)).first->second;
}

void connection::wait_until_ready(const call_options& limits, std::string_view& cancelled_for, intent what) {
  // Wait in short slices: a stop_token has no descriptor to poll.
  while (PQisBusy(conn_) != 0) {
    if (cancelled_for.empty()) {
      if (const std::string_view why = spool::detail::interruption(limits); !why.empty()) {
        cancelled_for = why;
        cancelled_at_ = std::chrono::steady_clock::now();
        cancel_done_ = std::make_shared<std::atomic<bool>>(false);
        send_cancel(conn_, cancel_done_);
      }
    } else if (std::chrono::steady_clock::now() - cancelled_at_ >= cancel_grace) {
      // Neither the statement nor the cancel was answered: give the
      // connection up, so the call ends now and nothing reuses it.
      given_up_ = true;
      ::shutdown(PQsocket(conn_), SHUT_RDWR);
      (void)PQconsumeInput(conn_);
      const std::string reason(cancelled_for);
      const auto message = fmt::format(
          "{} answered neither the statement nor its cancel ({}) within {} ms; the connection is given up",
          display_, reason, cancel_grace.count());
      if (what == intent::write)
        throw error(errc::in_doubt, message + "; the write's outcome is unknown", reason);
      throw error(errc::unavailable, message, reason);
    }
    int slice_ms = 100;
    if (limits.deadline && cancelled_for.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *limits.deadline - std::chrono::steady_clock::now());
      slice_ms = static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 100));
    }
    pollfd pfd{PQsocket(conn_), POLLIN, 0};
    ::poll(&pfd, 1, slice_ms);
    if (PQconsumeInput(conn_) == 0) return;  // connection lost: the caller reports it
  }
}

void connection::throw_failure(const PGresult* res, intent what, std::string_view cancelled_for,
                               std::string_view context) {
  const char* state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  if (!cancelled_for.empty() && state != nullptr && std::string_view(state) == "57014") {
    const std::string reason(cancelled_for);
    if (what == intent::write) {
      throw error(errc::in_doubt,
                  fmt::format("statement cancelled ({}) after it was sent; its outcome is unknown", reason),
                  reason, state);
    }
    throw error(errc::unavailable, fmt::format("statement cancelled ({})", reason), reason, state);
  }
  throw_error(conn_, res, what, context);
}

result_ptr connection::exec_limited(const std::string& sql, const text_params& p, intent what,
                                    const call_options& limits) {
  spool::detail::check_call(limits, "statement");
  const int n = static_cast<int>(p.ptrs.size());
  const std::string* name = prepare_cached(sql, n, what, limits);
  const int sent =
      name ? PQsendQueryPrepared(conn_, name->c_str(), n, p.ptrs.data(), p.length_ptr(), p.format_ptr(), 0)
           : PQsendQueryParams(conn_, sql.c_str(), n, nullptr, p.ptrs.data(), p.length_ptr(), p.format_ptr(),
                               0);
  if (sent != 1) throw_error(conn_, nullptr, intent::read, "send");
  std::string_view cancelled_for;
  wait_until_ready(limits, cancelled_for, what);
  // The statement's result, unless an error follows it: the server sends a
  // statement's rows at Execute but commits the implicit transaction at Sync,
  // so a session that dies in between (pg_terminate_backend, a shutdown, a
  // failing deferred trigger) delivers good rows and then the error of a
  // commit that never happened. The error decides, as in PQexec.
  result_ptr res;
  while (PGresult* r = PQgetResult(conn_)) {
    const auto st = PQresultStatus(r);
    const bool is_error = st == PGRES_FATAL_ERROR || st == PGRES_BAD_RESPONSE;
    const bool have_error =
        res && PQresultStatus(res.get()) != PGRES_COMMAND_OK && PQresultStatus(res.get()) != PGRES_TUPLES_OK;
    if (!res || (is_error && !have_error)) {
      res.reset(r);
    } else {
      PQclear(r);
    }
  }
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return res;  // finished before the cancel
  throw_failure(res.get(), what, cancelled_for, "statement");
}

std::vector<result_ptr> connection::pipeline(const std::vector<statement>& statements, intent what,
                                             const call_options& limits) {
  if (!opening_pending()) return send_pipeline(statements, what, limits, 0);
  // A copy: send_pipeline forgets opening_ as it sends, and the statements
  // below point into these strings.
  const std::vector<std::string> texts = opening_;
  std::vector<statement> all;
  all.reserve(texts.size() + statements.size());
  for (const auto& o : texts) all.push_back({o, {}});
  const std::size_t opening = all.size();
  // A statement not prepared yet is prepared first, and a failed prepare
  // inside a block aborts it: so the opening goes out on its own then, and
  // the call proceeds as in any open block (this costs the round trip the
  // opening would have cost anyway).
  const bool all_prepared = std::all_of(statements.begin(), statements.end(), [&](const statement& s) {
    return !owned_ || prepared_.count(std::string(s.sql)) > 0 || prepared_.size() >= max_prepared;
  });
  if (!all_prepared) {
    (void)send_pipeline(all, intent::read, limits, opening);
    return send_pipeline(statements, what, limits, 0);
  }
  // The opening goes first, in the same round trip. It stays pending until
  // the pipeline is about to go out: a refused parameter sends nothing, and
  // the block still opens with the next statement. A lost connection is
  // unavailable, not in doubt: the block began in this round trip and
  // nothing in it commits before the caller's COMMIT.
  all.insert(all.end(), statements.begin(), statements.end());
  auto results = send_pipeline(all, intent::read, limits, opening);
  results.erase(results.begin(), results.begin() + static_cast<std::ptrdiff_t>(opening));
  return results;
}

std::vector<result_ptr> connection::send_pipeline(const std::vector<statement>& statements, intent what,
                                                  const call_options& limits, std::size_t opening) {
  spool::detail::check_call(limits, "pipeline");
  ready_for_next();
  // Every statement's parameters are checked before pipeline mode and the
  // first send (reserve: the pointers into each text_params must not move).
  std::vector<text_params> all;
  all.reserve(statements.size());
  for (const auto& s : statements) all.emplace_back(s.params, client_utf8(), s.binary);
  // Hot statements are prepared (once per connection) before pipeline mode,
  // where a synchronous PQprepare is not allowed.
  std::vector<const std::string*> names;
  names.reserve(statements.size());
  for (const auto& s : statements) {
    names.push_back(
        prepare_cached(std::string(s.sql), static_cast<int>(s.params.size()), intent::read, limits));
  }
  if (PQenterPipelineMode(conn_) != 1) throw_error(conn_, nullptr, intent::read, "pipeline");
  if (opening > 0) opening_.clear();  // it goes out now
  struct exit_guard {
    PGconn* c;
    ~exit_guard() {
      if (PQpipelineStatus(c) != PQ_PIPELINE_OFF) PQexitPipelineMode(c);
    }
  } guard{conn_};
  bool sent_any = false;
  for (std::size_t k = 0; k < statements.size(); ++k) {
    const auto& s = statements[k];
    const text_params& p = all[k];
    const std::string sql(s.sql);
    const int n = static_cast<int>(s.params.size());
    const int sent = names[k] != nullptr ? PQsendQueryPrepared(conn_, names[k]->c_str(), n, p.ptrs.data(),
                                                               p.length_ptr(), p.format_ptr(), 0)
                                         : PQsendQueryParams(conn_, sql.c_str(), n, nullptr, p.ptrs.data(),
                                                             p.length_ptr(), p.format_ptr(), 0);
    if (sent != 1) {
      throw_error(conn_, nullptr, sent_any ? what : intent::read, "pipeline send");
    }
    sent_any = true;
  }
  if (PQpipelineSync(conn_) != 1) throw_error(conn_, nullptr, what, "pipeline sync");
  // With limits, every result is awaited in slices and the pipeline's
  // running statement cancelled at the limit (as exec_limited).
  std::string_view cancelled_for;
  const bool limited = limits.limited();
  if (limited && PQflush(conn_) == -1) throw_error(conn_, nullptr, what, "pipeline flush");
  auto next_result = [&] {
    if (limited) wait_until_ready(limits, cancelled_for, what);
    return result_ptr(PQgetResult(conn_));
  };
  std::vector<result_ptr> results;
  result_ptr first_error;
  for (std::size_t i = 0; i < statements.size(); ++i) {
    result_ptr res(next_result());
    if (!res) throw_error(conn_, nullptr, what, "pipeline");
    const auto status = PQresultStatus(res.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && !first_error &&
        status != PGRES_PIPELINE_ABORTED) {
      first_error = std::move(res);
      res.reset(PQmakeEmptyPGresult(conn_, PGRES_FATAL_ERROR));
    }
    results.push_back(std::move(res));
    while (result_ptr rest = next_result()) {
    }  // the NULL that ends this statement
  }
  // The sync point's own result. The implicit transaction commits here, so
  // an error before it (a session that died, a deferred constraint) means
  // the statements' good results above never committed.
  for (;;) {
    result_ptr res(next_result());
    if (!res) {
      if (!healthy()) throw_error(conn_, first_error.get(), what, "pipeline");
      continue;
    }
    const auto status = PQresultStatus(res.get());
    if (status == PGRES_PIPELINE_SYNC) break;
    if ((status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) && !first_error)
      first_error = std::move(res);
  }
  if (first_error) throw_failure(first_error.get(), what, cancelled_for, "pipeline");
  return results;
}

std::vector<row> connection::query(std::string_view sql, const std::vector<param>& params, intent what,
                                   const call_options& limits, binary_mask binary) {
  return rows_of(exec(sql, params, what, limits, binary).get());
}

// The simple-query text of a lazily opened block's opening and sql, in one
// round trip (and forgets the opening: it is sent now).
std::string connection::with_opening(const std::string& sql) {
  std::string out;
  for (const auto& o : opening_) out += o + ";\n";
  opening_.clear();
  return out + sql;
}

void connection::exec_script(const std::string& sql) {
  ready_for_next();
  result_ptr res(PQexec(conn_, with_opening(sql).c_str()));
  const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) return;
  throw_error(conn_, res.get(), intent::write, "script");
}

}  // namespace spool::pg::detail
