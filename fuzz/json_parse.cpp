// Fuzz target: the SQS server's request parser (serve/sqs/json_parse.hpp)
// against nlohmann::json::parse, the parser it replaced. On any input without
// a NUL byte (where nlohmann stops reading, a documented difference) both
// accept or both refuse, and what they accept dumps to the same text. dump()
// tells the number types apart: a double always has a point or an exponent,
// and both parsers type a non-negative integer as unsigned.
#include "serve/sqs/json_parse.hpp"

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "fuzz_check.hpp"

using spool::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string_view::npos) return 0;
  const auto ours = spool::serve::sqs::parse_json(text);
  std::optional<nlohmann::json> theirs;
  try {
    theirs = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {  // parse_error, or out_of_range for a number overflow
  }
  check(ours.has_value() == theirs.has_value(),
        "parse_json and nlohmann disagree on whether the text is JSON");
  if (ours) check(ours->dump() == theirs->dump(), "parse_json and nlohmann read different values");
  return 0;
}
