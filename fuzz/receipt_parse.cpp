// Fuzz target: the handles Spool gives out and reads back — mq receipts
// "<uuid>:<id>" (spool::mq::receipt_id) and op-queue list cursors
// (ops::detail::decode_cursor) — and the op queue's name rule. Bad input is
// spool::error(invalid_argument); what parses is exactly what Spool could
// have issued; a decoded cursor round-trips and carries a valid op id.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/text/utf8.hpp"
#include "common/uuid.hpp"
#include "fuzz_check.hpp"
#include "ops/cursor.hpp"
#include "ops/store.hpp"
#include "ops/validate.hpp"
#include "spool/mq/queue.hpp"

using spool::errc;
using spool::fuzz::check;
using spool::fuzz::check_error;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  try {
    const std::string id = spool::mq::receipt_id(input);
    check(input.size() >= 37, "a short receipt parsed");
    check(spool::detail::is_uuid(input.substr(0, 36)) && input[36] == ':',
          "a receipt without <uuid>: parsed");
    check(id == input.substr(37), "receipt_id is not the text after <uuid>:");
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
    check(e.reason() == "malformed_receipt", "receipt error without reason malformed_receipt");
  }

  try {
    const auto key = spool::ops::detail::decode_cursor(input);
    check(key.has_value() == !input.empty(), "only an empty cursor decodes to nothing");
    if (key) {
      // Cursor ids go to the database as bound text: they must be op ids.
      try {
        spool::ops::detail::check_name("id", key->id);
      } catch (const spool::error&) {
        spool::fuzz::fail("a cursor decoded to an id no op can have");
      }
      const std::string again = spool::ops::detail::encode_cursor(*key);
      const auto key2 = spool::ops::detail::decode_cursor(again);
      check(key2 && key2->id == key->id && key2->enqueued_at == key->enqueued_at,
            "cursor does not round-trip");
    }
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
  }

  try {
    spool::ops::detail::check_name("type", input);
    check(!input.empty() && input.size() <= 255 && spool::detail::is_utf8(input),
          "check_name too lax");
    for (char c : input)
      check(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "control character accepted");
  } catch (const spool::error& e) {
    check_error(e, errc::invalid_argument);
  }

  const std::string clean = spool::detail::utf8_repair(input, true);
  check(spool::detail::is_utf8(clean), "utf8_repair left invalid UTF-8");
  check(clean.find('\0') == std::string::npos, "utf8_repair left a NUL");
  return 0;
}
