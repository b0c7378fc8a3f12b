// Reading a request's JSON into nlohmann's DOM without nlohmann's lexer,
// which takes each character through several calls: about a sixth of the
// server's instructions per message went there (docs/SQS.md, "Where a
// message's instructions go"). Strings are scanned in runs by the library's
// JSON scanner (common/text/json_scanner.hpp).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>

namespace spool::serve::sqs {

// The value text holds: what nlohmann::json::parse(text) gives, number types
// included (unsigned, signed, or a double past 64 bits), the last of
// repeated keys kept. nullopt wherever nlohmann::json::parse throws (invalid
// UTF-8, an unpaired surrogate escape, a raw control character, a number too
// large for a double, anything after the value), and also where it stops
// early at a NUL byte and ignores the rest. No depth limit: nothing recurses.
// Pure; no exceptions beyond std::bad_alloc.
[[nodiscard]] std::optional<nlohmann::json> parse_json(std::string_view text);

}  // namespace spool::serve::sqs
