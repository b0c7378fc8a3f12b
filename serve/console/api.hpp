// The console's JSON API under /console/api/ (docs/CONSOLE.md): one function
// per capability for its reads and one for its actions, over the public
// library API. The site (site.cpp) has checked the session, and for an
// action the CSRF token and read-only mode, before any of them runs.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/http_site.hpp"
#include "spool/database.hpp"

namespace spool::mq {
class browser;
}
namespace spool::ops {
class queue;
}
namespace spool::outbox {
class store;
}

namespace spool::serve::console {

// A refusal with its HTTP status, a stable code and a message for the operator.
struct api_error {
  int status = 400;
  std::string code;
  std::string message;
};

// What the API works on. The ops queue and the outbox store are absent when
// their tables are not migrated in this database (the overview says so).
// Thread safety: every member is safe from many threads at once.
struct api_context {
  database db;
  std::string schema;
  std::unique_ptr<mq::browser> mq;
  std::unique_ptr<ops::queue> ops;
  std::string ops_missing;  // why ops is absent
  std::unique_ptr<outbox::store> outbox;
  std::string outbox_missing;
};

// The audit's name for the operator of a session.
struct actor {
  std::string user;
};

class mq_sampler;

// The overview of every capability: counts and oldest ages (overview.cpp).
nlohmann::json overview(api_context& ctx);
// Enqueued and completed per second over the last hour: the message queue's
// from the sampler, the op queue's per type from its rows (overview.cpp).
nlohmann::json throughput(api_context& ctx, const mq_sampler& sampler);

// Source queue → its dead-letter queue, from the RedrivePolicy of the queues
// the SQS API created; empty when the catalog is not migrated (overview.cpp).
std::map<std::string, std::string> dead_letter_queues(api_context& ctx);
// The queues whose dead-letter queue is queue, by name (api_dead_letters.cpp).
std::vector<std::string> dead_letter_sources(api_context& ctx, std::string_view queue);
// Moves a dead-letter queue's messages back to their sources: body
// {queue, ids: […]} or {queue, all: true, group?, id_prefix?, min_age?}, at
// most 1,000 a call. Answers {redriven: [{id, to}], in_flight, missing,
// unroutable, more}. Errors: api_error 409 not_a_dead_letter_queue, 400 for
// a malformed body (api_dead_letters.cpp).
nlohmann::json redrive_dead_letters(api_context& ctx, const nlohmann::json& body);

// route is the path after /console/api/mq/ (or ops/, outbox/). Throws
// api_error, or spool::error (mapped by the site).
nlohmann::json mq_read(api_context& ctx, std::string_view route, const http_request& r);
nlohmann::json mq_action(api_context& ctx, std::string_view route, const nlohmann::json& body,
                         const actor& who);
nlohmann::json ops_read(api_context& ctx, std::string_view route, const http_request& r);
nlohmann::json ops_action(api_context& ctx, std::string_view route, const nlohmann::json& body,
                          const actor& who);
nlohmann::json outbox_read(api_context& ctx, std::string_view route, const http_request& r);
nlohmann::json outbox_action(api_context& ctx, std::string_view route, const nlohmann::json& body,
                             const actor& who);

// Shared by the capabilities' APIs (params.cpp).
// A query parameter or a body member as text, bounded; absent is empty.
std::string text_param(const http_request& r, const std::string& name, std::size_t max_bytes = 1000);
// limit=N in 1..500, default 50.
std::size_t limit_param(const http_request& r);
std::string text_member(const nlohmann::json& body, const std::string& name, bool required,
                        std::size_t max_bytes = 1000);
// An array of strings (ids), at most max entries.
std::vector<std::string> ids_member(const nlohmann::json& body, const std::string& name,
                                    std::size_t max = 1000);
// A payload shown to an operator: parsed JSON, pretty-printed, with the
// values of authToken and signingSecret members (at any depth) replaced by
// "***"; raw text when it is not JSON. Sets "payload" and "payload_json".
void put_payload(nlohmann::json& out, const std::string& payload);
// The same redaction in place, for a JSON value shown as is (metadata).
void redact_secrets(nlohmann::json& v);
// A whole number of seconds parameter in 0..max, absent: nullopt.
std::optional<std::int64_t> seconds_param(const http_request& r, const std::string& name, std::int64_t max);
// RFC 3339 of unix seconds.
std::string time_text(std::int64_t unix_seconds);

}  // namespace spool::serve::console
