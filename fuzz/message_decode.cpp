// Fuzz target: the mq message codec (message-queue.md §3). Any bytes decode
// without throwing; a payload that decodes re-encodes without error and
// decodes back to the same message (encode is a fixed point); a poison reason
// names an offset and quotes at most one character; truncate_utf8 cuts a
// prefix of at most the asked size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "spool/mq/message.hpp"

using spool::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const spool::mq::decode_result r = spool::mq::decode(input);
  if (!r.ok()) {
    check(!r.error.empty(), "poison without a reason");
    check(r.error.find(" at offset ") != std::string::npos, "poison reason without an offset");
    // Rule text + one quoted character + offset: never a slice of the payload.
    check(r.error.size() < 160, "poison reason quotes more than one character");
  } else {
    const spool::mq::message& m = *r.value;
    std::string wire;
    try {
      wire = spool::mq::encode(m);
    } catch (const spool::error&) {
      spool::fuzz::fail("a decoded message does not encode");
    }
    const spool::mq::decode_result again = spool::mq::decode(wire);
    check(again.ok(), "an encoded message does not decode");
    check(*again.value == m, "decode(encode(m)) differs from m");
    check(spool::mq::encode(*again.value) == wire, "encode is not a fixed point");
    (void)spool::mq::strict_violation(m, m.id);
  }
  const std::size_t cut = size == 0 ? 0 : data[0] % 64;
  const std::string t = spool::mq::truncate_utf8(input, cut);
  check(t.size() <= cut, "truncate_utf8 longer than asked");
  check(input.substr(0, t.size()) == t, "truncate_utf8 is not a prefix");
  return 0;
}
