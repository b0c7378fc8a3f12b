#include "serve/sqs/service.hpp"

#include <fmt/format.h>

#include "serve/sqs/actions.hpp"
#include "serve/sqs/attributes.hpp"
#include "serve/sqs/fifo.hpp"
#include "serve/sqs/move_tasks.hpp"
#include "serve/sqs/params.hpp"
#include "spool/error.hpp"

namespace spool::serve::sqs {

namespace {
using handler_fn = nlohmann::json (*)(const actions::call&);
struct route {
  const char* action;
  handler_fn fn;
};
constexpr route routes[] = {
    {"CreateQueue", &actions::create_queue},
    {"GetQueueUrl", &actions::get_queue_url},
    {"ListQueues", &actions::list_queues},
    {"GetQueueAttributes", &actions::get_queue_attributes},
    {"SetQueueAttributes", &actions::set_queue_attributes},
    {"DeleteQueue", &actions::delete_queue},
    {"PurgeQueue", &actions::purge_queue},
    {"TagQueue", &actions::tag_queue},
    {"UntagQueue", &actions::untag_queue},
    {"ListQueueTags", &actions::list_queue_tags},
    {"SendMessage", &actions::send_message},
    {"SendMessageBatch", &actions::send_message_batch},
    {"ReceiveMessage", &actions::receive_message},
    {"DeleteMessage", &actions::delete_message},
    {"DeleteMessageBatch", &actions::delete_message_batch},
    {"ChangeMessageVisibility", &actions::change_message_visibility},
    {"ChangeMessageVisibilityBatch", &actions::change_message_visibility_batch},
    {"ListDeadLetterSourceQueues", &actions::list_dead_letter_source_queues},
    {"StartMessageMoveTask", &actions::start_message_move_task},
    {"ListMessageMoveTasks", &actions::list_message_move_tasks},
    {"CancelMessageMoveTask", &actions::cancel_message_move_task},
};
}  // namespace

service::service(database db, service_options options)
    : db_(db), opts_(std::move(options)), catalog_(std::move(db), opts_.schema), tasks_(std::make_unique<move_tasks>()) {
  try {
    (void)catalog_.list("", "", 1);
  } catch (const spool::error& e) {
    if (e.code() != errc::database_error) throw;
    throw spool::error(
        errc::invalid_state,
        fmt::format("spool serve: the queue catalog is missing (run `spool migrate`): {}", e.what()),
        "missing_tables");
  }
}

service::~service() { stop(); }

void service::stop() noexcept { (void)stop_.request_stop(); }

nlohmann::json service::handle(const request& r, const std::string& account, const std::string& base_url) {
  for (const auto& route : routes) {
    if (r.action == route.action) return route.fn(actions::call{*this, r.params, account, base_url});
  }
  throw error("UnsupportedOperation", fmt::format("{} is not served by this spool serve yet", r.action));
}

mq::catalog_entry service::entry_of(const nlohmann::json& params, const std::string& account) {
  const auto ref = parse_queue_url(required_string(params, "QueueUrl"));
  if (ref.account != account) throw error("QueueDoesNotExist", "The specified queue does not exist.");
  // Entries are read again after a second, so changes by another server
  // process show within it; this process's own changes drop the copy at once.
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    const auto it = entries_.find(ref.name);
    if (it != entries_.end() && now - it->second.first < std::chrono::seconds(1)) {
      if (it->second.second.account != account) throw error("QueueDoesNotExist", "The specified queue does not exist.");
      return it->second.second;
    }
  }
  auto e = catalog_.find(ref.name);
  if (!e || e->account != account) throw error("QueueDoesNotExist", "The specified queue does not exist.");
  std::lock_guard lock(mu_);
  entries_[ref.name] = {now, *e};
  return *e;
}

std::shared_ptr<mq::queue> service::queue_of(const mq::catalog_entry& e) {
  std::lock_guard lock(mu_);
  auto& slot = queues_[e.name];
  if (!slot.second || slot.first != e.modified) {
    mq::queue_options o;
    o.name = e.name;
    o.schema = opts_.schema;
    const auto vt = effective_int(e, "VisibilityTimeout");
    // mq::queue takes 0 as "the default": a zero window is one second here.
    o.visibility_timeout = std::chrono::seconds(vt == 0 ? 1 : vt);
    // FIFO: no message of a group is handed out while an earlier one is in flight.
    o.strict_group_order = is_fifo_name(e.name);
    o.notify = true;  // PostgreSQL: long polls are woken by other processes' sends too (SQLite: in-process)
    // The fallback when no wake-up comes (on SQLite, sends of other processes).
    o.poll_interval = std::chrono::milliseconds(5000);
    o.max_payload_bytes = 8u << 20;  // the size rule is SQS's (MaximumMessageSize), checked before encoding
    slot = {e.modified, std::make_shared<mq::queue>(db_, o)};
  }
  return slot.second;
}

void service::forget(const std::string& name) {
  std::lock_guard lock(mu_);
  queues_.erase(name);
  entries_.erase(name);
}

void service::sweep(const mq::catalog_entry& e) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    auto& last = swept_[e.name];
    if (now - last < std::chrono::seconds(1)) return;
    last = now;
  }
  catalog_.expire(e.name, std::chrono::system_clock::now() -
                              std::chrono::seconds(effective_int(e, "MessageRetentionPeriod")));
}

std::mutex& service::send_lock(const std::string& name) {
  std::lock_guard lock(mu_);
  auto& m = send_locks_[name];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

}  // namespace spool::serve::sqs
