// The actions of the SQS API that spool serve runs, one function each:
// queues in sqs/queue_actions.cpp, messages in sqs/message_actions.cpp.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/sqs/service.hpp"

namespace spool::serve::sqs {

struct actions {
  using json = nlohmann::json;
  // One request as an action sees it.
  struct call {
    service& s;
    const json& p;  // the parameters
    const std::string& account;
    const std::string& base_url;
  };

  // ---- queues (queue_actions.cpp) ----
  static json create_queue(const call& c);
  static json get_queue_url(const call& c);
  static json list_queues(const call& c);
  static json get_queue_attributes(const call& c);
  static json set_queue_attributes(const call& c);
  static json delete_queue(const call& c);
  static json purge_queue(const call& c);
  static json tag_queue(const call& c);
  static json untag_queue(const call& c);
  static json list_queue_tags(const call& c);

  // ---- messages (message_actions.cpp) ----
  static json send_message(const call& c);
  static json send_message_batch(const call& c);
  static json receive_message(const call& c);
  static json delete_message(const call& c);
  static json delete_message_batch(const call& c);
  static json change_message_visibility(const call& c);
  static json change_message_visibility_batch(const call& c);

  // ---- dead-letter queues (dead_letter_actions.cpp) ----
  static json list_dead_letter_source_queues(const call& c);
  static json start_message_move_task(const call& c);
  static json list_message_move_tasks(const call& c);
  static json cancel_message_move_task(const call& c);

  // Helpers the families share.
  // A RedrivePolicy in attributes must name an existing queue of the caller's, of the same type.
  static void check_redrive_target(const call& c, const std::map<std::string, std::string>& attributes,
                                   bool fifo);
  // Records d's first receive time in d and in its row, unless d has one
  // already; called when the call asks for ApproximateFirstReceiveTimestamp.
  static void stamp_first_receive(const call& c, const mq::catalog_entry& e, mq::delivered_message& d);
  // Receives that went past the queue's RedrivePolicy move to its dead-letter
  // queue instead of being handed out: returns whether d was moved.
  static bool dead_lettered(const call& c, const mq::catalog_entry& e, const mq::delivered_message& d);
  static mq::catalog_entry entry_of(const call& c) { return c.s.entry_of(c.p, c.account); }
  static std::shared_ptr<mq::queue> queue_of(const call& c, const mq::catalog_entry& e) {
    return c.s.queue_of(e);
  }
  static std::string url_of(const call& c, const std::string& account, const std::string& name) {
    return c.base_url + "/" + account + "/" + name;
  }
};

}  // namespace spool::serve::sqs
