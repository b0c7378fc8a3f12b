// The SQS actions over a Spool database: queues in mq::catalog, messages in
// mq::queue (one handle per queue, made from its attributes), so the C++ API
// and the CLI see the same messages. What each action does is in
// sqs/queue_actions.cpp and sqs/message_actions.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>

#include "serve/sqs/protocol.hpp"
#include "spool/database.hpp"
#include "spool/mq/catalog.hpp"
#include "spool/mq/queue.hpp"

namespace spool::serve::sqs {

class move_tasks;

struct service_options {
  std::string schema;                // PostgreSQL schema of the tables (empty: current_schema())
  std::string region = "us-east-1";  // in QueueArn
};

// Thread safety: handle() is called from the server's threads at once.
class service {
 public:
  // Checks that the catalog table exists. Errors: as mq::catalog, and
  // invalid_state (reason missing_tables) naming `spool migrate`.
  service(database db, service_options options = {});
  ~service();
  service(const service&) = delete;
  service& operator=(const service&) = delete;

  // Runs one request for account; base_url is "http://HOST:PORT" as the
  // client reached us (queue URLs are built from it). Throws sqs::error, or
  // spool::error for a database that failed.
  nlohmann::json handle(const request& r, const std::string& account, const std::string& base_url);
  // Ends waiting long polls (they return empty) and refuses new ones.
  void stop() noexcept;
  // ReceiveMessage calls waiting in a long poll now (for /metrics).
  [[nodiscard]] std::int64_t long_polls_waiting() const noexcept { return waiting_.load(); }

 private:
  friend struct actions;
  // The queue of a QueueUrl the caller owns (read at most a second ago);
  // QueueDoesNotExist otherwise.
  mq::catalog_entry entry_of(const nlohmann::json& params, const std::string& account);
  // The message handle of a queue, made once per attribute version.
  // forget() drops both after this process changed or deleted the queue.
  std::shared_ptr<mq::queue> queue_of(const mq::catalog_entry& e);
  void forget(const std::string& name);
  // Deletes the queue's messages older than its MessageRetentionPeriod, at
  // most once a second per queue.
  void sweep(const mq::catalog_entry& e);
  // Held around a FIFO queue's sends in this process: the transactions of
  // one queue then begin in sequence-number order, so their sent times agree
  // with it (the group order key is the sent time, then the id).
  std::mutex& send_lock(const std::string& name);

  database db_;
  service_options opts_;
  mq::catalog catalog_;
  std::stop_source stop_;
  std::atomic<std::int64_t> waiting_{0};
  std::mutex mu_;
  std::map<std::string, std::pair<std::chrono::system_clock::time_point, std::shared_ptr<mq::queue>>> queues_;
  std::map<std::string, std::chrono::steady_clock::time_point> purged_;  // under mu_
  std::map<std::string, std::chrono::steady_clock::time_point> swept_;   // under mu_
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, mq::catalog_entry>> entries_;  // under mu_
  std::map<std::string, std::unique_ptr<std::mutex>> send_locks_;       // under mu_
  std::unique_ptr<move_tasks> tasks_;
};

}  // namespace spool::serve::sqs
