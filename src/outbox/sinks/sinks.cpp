// The shipped sinks of outbox.md §8 (all but the HTTP webhook) and the
// delivery document; the webhook is http.cpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/log.hpp"
#include "outbox/text.hpp"
#include "process.hpp"
#include "spool/error.hpp"
#include "spool/mq/message.hpp"
#include "spool/mq/queue.hpp"
#include "spool/outbox/sink.hpp"
#include "spool/tx.hpp"

namespace spool::outbox {

std::string_view to_string(outcome_class c) noexcept {
  switch (c) {
    case outcome_class::delivered:
      return "delivered";
    case outcome_class::transient:
      return "transient";
    case outcome_class::permanent:
      return "permanent";
  }
  return "invalid";
}

std::string delivery_document(const claimed_message& m) {
  const auto& e = m.message;
  std::string out = "{\"envelope\":";
  out += canonical_json(e);
  out += fmt::format(",\"claim_count\":{},\"failure_count\":{},\"available_at\":", e.claim_count,
                     e.failure_count);
  if (e.available_at) {
    out += '"' + format_time(*e.available_at) + '"';
  } else {
    out += "null";
  }
  out += '}';
  return out;
}

std::vector<sink::batch_record> sink::record_delivered_batch(store& s,
                                                             const std::vector<const claimed_message*>& rows,
                                                             const call_options& c) {
  std::vector<batch_record> out(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    try {
      record_delivered(s, *rows[i], c);
      out[i].delivered = true;
    } catch (const sink_failed& e) {
      out[i].failure = e.outcome();
    } catch (const error& e) {
      if (e.code() != errc::lease_lost) throw;  // the relay resolves every row of the batch
    }
  }
  return out;
}

namespace {

constexpr std::size_t message_bytes = 1024;

std::string sanitized(std::string_view text) { return detail::sanitize_error_text(text, message_bytes); }

// Writes all of data; false with errno set on failure.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t put = ::write(fd, data.data(), data.size());
    if (put < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(put));
  }
  return true;
}

class callback_sink final : public sink {
 public:
  explicit callback_sink(sink_callback fn) : fn_(std::move(fn)) {}
  sink_outcome publish(const claimed_message& m, std::stop_token stop) override {
    return fn_(m, std::move(stop));
  }

 private:
  sink_callback fn_;
};

// stdout: one write(2) per line under a process-wide lock.
std::mutex& stdout_mutex() {
  static std::mutex m;
  return m;
}

class stdout_sink final : public sink {
 public:
  sink_outcome publish(const claimed_message& m, std::stop_token) override {
    const std::string line = delivery_document(m) + "\n";
    std::lock_guard lock(stdout_mutex());
    std::fflush(stdout);  // whatever the application buffered goes first
    if (!write_all(STDOUT_FILENO, line)) {
      return sink_outcome::transient("stdout_write_failed",
                                     std::string("write to stdout: ") + std::strerror(errno));
    }
    return sink_outcome::delivered();
  }
};

class file_sink final : public sink {
 public:
  explicit file_sink(file_sink_options o) : opts_(std::move(o)) {
    if (opts_.path.empty()) throw error(errc::invalid_argument, "file sink: path is empty", "invalid_config");
    open_locked();
    if (fd_ < 0) {
      throw error(errc::unavailable,
                  fmt::format("file sink: cannot open {}: {}", opts_.path, std::strerror(errno)),
                  "file_open_failed");
    }
  }
  ~file_sink() override {
    if (fd_ >= 0) ::close(fd_);
  }

  sink_outcome publish(const claimed_message& m, std::stop_token) override {
    const std::string line = delivery_document(m) + "\n";
    std::lock_guard lock(mutex_);
    if (fd_ < 0) open_locked();
    if (fd_ < 0) return failed("open");
    if (!write_all(fd_, line)) return failed("write");
    if (opts_.fsync && regular_ && ::fsync(fd_) != 0) return failed("fsync");
    return sink_outcome::delivered();
  }

  void reopen() override {
    std::lock_guard lock(mutex_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    open_locked();
    if (fd_ < 0) log().warn("outbox file sink: cannot reopen {}: {}", opts_.path, std::strerror(errno));
  }

 private:
  static spdlog::logger& log() { return spool::detail::log(); }
  void open_locked() {
    fd_ = ::open(opts_.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    // Only a regular file keeps data to sync: fsync on a device or a pipe
    // (/dev/null, /dev/stdout, a FIFO) fails with EINVAL, and every delivery
    // to it would be retried for ever.
    struct stat st {};
    regular_ = fd_ >= 0 && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  }
  sink_outcome failed(const char* what) {
    const int err = errno;
    // A failed write may have left a partial line: a fresh line starts the next one.
    if (fd_ >= 0 && std::string_view(what) == "write") (void)write_all(fd_, "\n");
    return sink_outcome::transient("file_write_failed",
                                   fmt::format("{} {}: {}", what, opts_.path, std::strerror(err)));
  }

  file_sink_options opts_;
  std::mutex mutex_;
  int fd_ = -1;
  bool regular_ = false;
};

class command_sink final : public sink {
 public:
  explicit command_sink(command_sink_options o) : opts_(std::move(o)) {
    if (opts_.argv.empty() || opts_.argv[0].empty()) {
      throw error(errc::invalid_argument, "command sink: argv is empty", "invalid_config");
    }
    if (opts_.timeout.count() <= 0) {
      throw error(errc::invalid_argument,
                  fmt::format("command sink: timeout = {} ms must be positive", opts_.timeout.count()),
                  "invalid_config");
    }
    if (opts_.kill_grace.count() < 0) {
      throw error(
          errc::invalid_argument,
          fmt::format("command sink: kill_grace = {} ms must not be negative", opts_.kill_grace.count()),
          "invalid_config");
    }
  }

  sink_outcome publish(const claimed_message& m, std::stop_token stop) override {
    spool::detail::process_spec spec;
    spec.argv = opts_.argv;
    spec.input = delivery_document(m);
    spec.env = opts_.env;
    spec.env.emplace_back("SPOOL_OUTBOX_ID", m.message.id);
    spec.env.emplace_back("SPOOL_OUTBOX_TOPIC", m.message.topic);
    spec.env.emplace_back("SPOOL_OUTBOX_CLAIM_COUNT", std::to_string(m.message.claim_count));
    spec.env.emplace_back("SPOOL_OUTBOX_FAILURE_COUNT", std::to_string(m.message.failure_count));
    spec.timeout = opts_.timeout;
    spec.kill_grace = opts_.kill_grace;
    spec.stderr_head_bytes = message_bytes;
    spool::detail::process_result r;
    try {
      r = spool::detail::run_process(spec, stop);
    } catch (const std::exception& e) {
      return sink_outcome::transient("command_start_failed", sanitized(e.what()));
    }
    const std::string text = sanitized(r.stderr_head);
    if (r.timed_out) {
      return sink_outcome::transient(
          "timeout", text.empty() ? fmt::format("timed out after {} ms", opts_.timeout.count()) : text);
    }
    if (r.stopped && !(r.exit_code && *r.exit_code == 0)) {
      return sink_outcome::transient("stopped", text.empty() ? "stopped" : text);
    }
    if (r.exit_code) {
      if (*r.exit_code == 0) return sink_outcome::delivered();
      const std::string code = fmt::format("exit_{}", *r.exit_code);
      const std::string msg = text.empty() ? fmt::format("exited with status {}", *r.exit_code) : text;
      if (opts_.permanent_exit_codes.contains(*r.exit_code)) return sink_outcome::permanent(code, msg);
      return sink_outcome::transient(code, msg);
    }
    const int sig = r.signal.value_or(0);
    return sink_outcome::transient(fmt::format("signal_{}", sig),
                                   text.empty() ? fmt::format("killed by signal {}", sig) : text);
  }

 private:
  command_sink_options opts_;
};

class mq_sink final : public sink {
 public:
  mq_sink(database db, mq_sink_options o) : db_(std::move(db)), opts_(std::move(o)) {
    if (opts_.queue.empty() && opts_.topic_queues.empty()) {
      throw error(errc::invalid_argument, "queue sink: neither queue nor topic_queues is set",
                  "invalid_config");
    }
  }

  sink_outcome publish(const claimed_message& m, std::stop_token) override {
    mq::batch_row row;
    if (auto rejected = prepare(m, row)) return *rejected;
    if (opts_.same_database) return sink_outcome::delivered();  // inserted by record_delivered
    try {
      spool::tx tx(db_);
      (void)mq::insert_batch(tx, {row}, insert_options());
      tx.commit();
    } catch (const error& e) {
      if (e.code() == errc::invalid_argument)
        return sink_outcome::permanent("sink_rejected", sanitized(e.what()));
      return sink_outcome::transient("mq_failed", sanitized(e.what()));
    }
    return sink_outcome::delivered();  // inserted or already_present
  }

  [[nodiscard]] bool records_delivery() const noexcept override { return opts_.same_database; }

  void record_delivered(store& s, const claimed_message& m, const call_options& c) override {
    if (!opts_.same_database) {
      s.mark_delivered(m.ref, c);
      return;
    }
    mq::batch_row row;
    if (auto rejected = prepare(m, row)) throw sink_failed(std::move(*rejected));
    // Inside the fenced transaction, after the fence check: the queue row
    // commits with T5 or not at all.
    auto insert = [&](spool::tx& tx) {
      try {
        (void)mq::insert_batch(tx, {row}, insert_options());
      } catch (const error& e) {
        if (e.code() == errc::unavailable || e.code() == errc::in_doubt)
          throw;  // the relay retries the transition
        if (e.code() == errc::invalid_argument) {
          throw sink_failed(sink_outcome::permanent("sink_rejected", sanitized(e.what())));
        }
        throw sink_failed(sink_outcome::transient("mq_failed", sanitized(e.what())));
      }
    };
    s.mark_delivered(m.ref, insert, c);
  }

  // One transaction: the fences of every row, then the queue rows of those
  // still held. Rows the sink cannot turn into messages fail on their own;
  // a queue insert that rejects the batch is retried row by row, so one bad
  // row cannot hold the others back.
  std::vector<batch_record> record_delivered_batch(store& s, const std::vector<const claimed_message*>& rows,
                                                   const call_options& c) override {
    if (!opts_.same_database) return sink::record_delivered_batch(s, rows, c);
    std::vector<batch_record> out(rows.size());
    std::vector<lease_ref> refs;
    std::vector<std::size_t> index;  // refs[k] is rows[index[k]]
    std::vector<mq::batch_row> prepared;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      mq::batch_row row;
      if (auto rejected = prepare(*rows[i], row)) {
        out[i].failure = std::move(*rejected);
        continue;
      }
      refs.push_back(rows[i]->ref);
      index.push_back(i);
      prepared.push_back(std::move(row));
    }
    if (refs.empty()) return out;
    auto insert = [&](spool::tx& tx, const std::vector<bool>& held) {
      std::vector<mq::batch_row> keep;
      for (std::size_t k = 0; k < held.size(); ++k) {
        if (held[k]) keep.push_back(prepared[k]);
      }
      if (keep.empty()) return;
      try {
        (void)mq::insert_batch(tx, keep, insert_options());
      } catch (const error& e) {
        if (e.code() == errc::unavailable || e.code() == errc::in_doubt) throw;
        throw sink_failed(sink_outcome::transient("mq_failed", sanitized(e.what())));  // rolled back: row by row
      }
    };
    std::vector<bool> marked;
    try {
      marked = s.mark_delivered_batch(refs, insert, c);
    } catch (const sink_failed&) {
      std::vector<const claimed_message*> held_rows;
      for (const std::size_t i : index) held_rows.push_back(rows[i]);
      auto one_by_one = sink::record_delivered_batch(s, held_rows, c);
      for (std::size_t k = 0; k < index.size(); ++k) out[index[k]] = std::move(one_by_one[k]);
      return out;
    }
    for (std::size_t k = 0; k < marked.size(); ++k) out[index[k]].delivered = marked[k];
    return out;
  }

 private:
  [[nodiscard]] mq::insert_options insert_options() const {
    mq::insert_options o;
    o.schema = opts_.schema;
    o.notify = opts_.notify;
    return o;
  }

  // Fills row; a permanent outcome when the envelope cannot become a queue message.
  std::optional<sink_outcome> prepare(const claimed_message& m, mq::batch_row& row) const {
    const auto& e = m.message;
    const auto it = opts_.topic_queues.find(e.topic);
    row.queue_name = it != opts_.topic_queues.end() ? it->second : opts_.queue;
    if (row.queue_name.empty()) {
      return sink_outcome::permanent("sink_rejected", sanitized("no queue for topic " + e.topic));
    }
    auto decoded = mq::decode(e.payload);
    if (!decoded.ok()) {
      return sink_outcome::permanent("sink_rejected",
                                     sanitized("payload is not a queue message: " + decoded.error));
    }
    row.body = std::move(*decoded.value);
    if (!e.ordering_key.empty()) {
      // messageGroupId, and through it the row's message_group_id column.
      row.body.message_group_id = e.ordering_key;
    }
    if (row.body.id.empty()) row.body.id = e.id;
    return std::nullopt;
  }

  database db_;
  mq_sink_options opts_;
};

}  // namespace

std::shared_ptr<sink> make_callback_sink(sink_callback fn) {
  if (!fn) throw error(errc::invalid_argument, "callback sink: the callback is empty", "sink_required");
  return std::make_shared<callback_sink>(std::move(fn));
}

std::shared_ptr<sink> make_stdout_sink() { return std::make_shared<stdout_sink>(); }

std::shared_ptr<sink> make_file_sink(file_sink_options options) {
  return std::make_shared<file_sink>(std::move(options));
}

std::shared_ptr<sink> make_command_sink(command_sink_options options) {
  return std::make_shared<command_sink>(std::move(options));
}

std::shared_ptr<sink> make_mq_sink(database db, mq_sink_options options) {
  return std::make_shared<mq_sink>(std::move(db), std::move(options));
}

}  // namespace spool::outbox
