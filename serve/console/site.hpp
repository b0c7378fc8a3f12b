// The Spool console (docs/CONSOLE.md), served by `spool serve` under
// /console/: the embedded pages, and the JSON API under /console/api/ that
// they (and scripts) call. Access: with a token, a login opens a session
// (an HttpOnly, SameSite=Strict cookie); without one, any client that reaches
// the address gets a session, so keep it on loopback. Every action carries the
// session's CSRF token in X-Spool-CSRF, and read-only mode refuses them all.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "serve/http_site.hpp"
#include "spool/database.hpp"

namespace spool::serve::console {

struct site_options {
  std::string token;  // empty: no login
  bool read_only = false;
  std::string schema;                            // PostgreSQL schema of Spool's tables
  std::string ops_table = "ops_queue";           // the op queue shown
  std::string outbox_table = "outbox_messages";  // the outbox shown
  std::chrono::seconds sample_interval{10};      // the message queue's throughput samples
};

// Thread safety: handle() is called from many request threads at once.
class site {
 public:
  // Opens the op queue and the outbox store when their tables are migrated
  // (the console shows why when they are not). Errors: invalid_argument
  // for an invalid schema or table name; unavailable.
  site(database db, site_options options);
  ~site();
  site(const site&) = delete;
  site& operator=(const site&) = delete;

  http_response handle(const http_request& r);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace spool::serve::console
