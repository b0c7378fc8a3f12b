// spool::mq::catalog — the named queues of a database with their attributes
// and tags, as the SQS API of `spool serve` creates and lists them. A queue's
// messages stay in queue_messages under its name, so mq::queue, the CLI and
// the SQS API share them. Needs the mq_catalog migration (`spool migrate`).
// Thread safety: a catalog may be shared between threads; each call runs in
// its own transaction.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/database.hpp"

namespace spool::mq {

struct catalog_entry {
  std::string name;
  std::string account;                            // the creator's 12-digit account
  std::map<std::string, std::string> attributes;  // SQS's attribute names and values, as text
  std::map<std::string, std::string> tags;
  std::chrono::system_clock::time_point created, modified;
};

enum class create_outcome { created, exists };

class catalog {
 public:
  // schema: PostgreSQL schema of the tables (empty: current_schema()).
  // Errors: invalid_argument for an invalid schema name.
  explicit catalog(database db, std::string schema = {});

  // Adds the entry unless the name is taken (then `exists`, and nothing
  // changes: the caller compares attributes). Errors: unavailable, in_doubt,
  // database_error (the table is missing: run `spool migrate`).
  create_outcome create(const catalog_entry& entry);
  // The entry of name, or nullopt.
  [[nodiscard]] std::optional<catalog_entry> find(std::string_view name);
  // Entries whose name starts with prefix, after the name `after`, in name
  // order, at most limit.
  [[nodiscard]] std::vector<catalog_entry> list(std::string_view prefix, std::string_view after,
                                                std::size_t limit);
  // Merges attributes into the entry's (an empty value removes one). False
  // when there is no such queue.
  bool set_attributes(std::string_view name, const std::map<std::string, std::string>& attributes);
  // Adds or replaces tags; removes the keys in untag. False when there is no such queue.
  bool tag(std::string_view name, const std::map<std::string, std::string>& tags,
           const std::vector<std::string>& untag = {});
  // Deletes every message of the queue, in flight too.
  void purge(std::string_view name);
  // Deletes the entry, its messages and its quarantined rows in one
  // transaction. False when there was no entry.
  bool remove(std::string_view name);

 private:
  database db_;
  std::string schema_;
};

}  // namespace spool::mq
