// `spool relay --sink http:URL`: the webhook sink's options from the relay's
// flags (outbox.md §8, CLI sink forms).
#pragma once

#include <string>
#include <vector>

#include "spool/outbox/sink.hpp"

namespace spool::cli {

struct webhook_flags {
  std::string secret_file;            // --secret-file; else $SPOOL_WEBHOOK_SECRET
  std::string standard_secrets_file;  // --standard-webhooks-secrets: one secret per line
  std::string ca_file;                // --ca-file
  std::string timeout;                // --http-timeout (a duration)
  std::vector<std::string> headers;   // --header 'Name: value', repeatable
};

// The options for url. The secret is the file's content without its trailing
// line break, or $SPOOL_WEBHOOK_SECRET; it is never printed. Errors:
// invalid_argument (invalid_config) for no secret, an empty one, an
// unreadable secret file or a Standard Webhooks secrets file without a
// secret (naming the path), a header without a colon or a
// bad duration; the sink itself checks the rest.
[[nodiscard]] spool::outbox::http_sink_options webhook_options(const std::string& url,
                                                               const webhook_flags& f);

}  // namespace spool::cli
