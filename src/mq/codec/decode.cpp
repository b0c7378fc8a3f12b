// spool::mq::decode: the lenient legacy decoding rule (message-queue.md §3.2) over the codec's scanner.
//
// Decisions where the spec leaves room (also pinned by tests/unit/message_codec_test.cpp):
// - A syntax error anywhere wins over a type error (`{"id":5,` is a syntax error), as in Go, which checks the
//   whole text before decoding; of several type errors the first is reported.
// - Invalid UTF-8 becomes one U+FFFD per byte that starts no valid sequence, and an unpaired surrogate escape
//   one U+FFFD, as Go's decoder does.
// - A repeated unknown key keeps one extra member, at the position of its first occurrence, with the last
//   value, as a JSON object would. Unknown keys differing only in case are different members.
// - Extra values are re-emitted compactly: numbers verbatim, strings re-escaped minimally (valid UTF-8 kept
//   raw, so "\u00e9" becomes "é").
// - encode() trims JSON whitespace around an extra value and rejects a value nested deeper than the payload's
//   limit allows (the payload object is level 1), since it would not decode. It does not reject duplicate
//   extra keys (still valid JSON; the decoder keeps the last).
// - strict_violation() cuts a quoted value to 64 bytes, then escapes `"`, `\` and control characters and
//   replaces invalid UTF-8, so the reason is always storable text.
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mq/codec/body.hpp"
#include "mq/codec/json.hpp"
#include "spool/mq/message.hpp"

namespace spool::mq {
namespace {

using namespace detail::codec;

// Decodes the top-level object's members into a message (§3.2).
class decoder : public scanner {
 public:
  explicit decoder(std::string_view payload) : scanner(payload, false) {}

  std::string type_error;  // the first wrong-type value; a later syntax error takes precedence

  // The object at p_ (the opening brace).
  bool object(message& m) {
    if (!(advance() && skip_ws_more())) return false;
    if (peek() == '}') return advance();
    for (;;) {
      if (peek() != '"') return fail_char("looking for beginning of object key string");
      key_.clear();
      if (!string<str_mode::decode>(&key_) || !skip_ws_more()) return false;
      if (peek() != ':') return fail_char("after object key");
      if (!(advance() && skip_ws_more() && member(m, match_field(key_)) && skip_ws_more())) return false;
      if (peek() == '}') return advance();
      if (peek() != ',') return fail_char("after object key:value pair");
      if (!(advance() && skip_ws_more())) return false;
    }
  }

  void note_type_error(const char* kind, std::string_view target) {
    if (!type_error.empty()) return;
    type_error = std::string("cannot unmarshal ") + kind + " into " + std::string(target) + " at offset " +
                 std::to_string(offset());
  }

 private:
  // The value of one member, at p_.
  bool member(message& m, field f) {
    const char c = peek();
    if (f == kUnknown) {
      extra_member& e = extra_slot(m.extra);
      e.json.clear();
      return value(&e.json, 1);
    }
    if (c == 'n') {  // null: optionals become unset, other fields keep their value
      if (f == kAuthToken) m.auth_token.reset();
      if (f == kSigningSecret) m.signing_secret.reset();
      if (f == kMessageGroupId) m.message_group_id.reset();
      return value(nullptr, 1);
    }
    if (f == kHighPriority && (c == 't' || c == 'f')) {
      m.high_priority = c == 't';
      return value(nullptr, 1);
    }
    if (f != kHighPriority && c == '"') {
      std::string* dst = string_field(m, f);
      dst->clear();
      return string<str_mode::decode>(dst);
    }
    if (const char* kind = json_kind(c)) {
      note_type_error(kind, std::string("field ")
                                .append(kFieldNames[f])
                                .append(f == kHighPriority ? " of type bool" : " of type string"));
    }
    return value(nullptr, 1);  // skips the value, or reports the syntax error
  }

  static std::string* string_field(message& m, field f) {
    if (f == kAuthToken) return &m.auth_token.emplace();
    if (f == kSigningSecret) return &m.signing_secret.emplace();
    if (f == kMessageGroupId) return &m.message_group_id.emplace();
    std::string* const plain[] = {&m.id,   &m.pool_code,      nullptr,
                                  nullptr, &m.mediation_type, &m.mediation_target,
                                  nullptr, nullptr,           &m.dispatch_mode};
    return plain[f];
  }

  // The extra member for key_: the existing one for a repeated key, else a new one at the end. Past a few
  // members a hash index keeps a payload of many unknown keys linear.
  extra_member& extra_slot(std::vector<extra_member>& extra) {
    constexpr std::size_t kLinear = 32;
    if (extra.size() < kLinear) {
      for (extra_member& e : extra) {
        if (e.key == key_) return e;
      }
    } else {
      if (index_.empty()) {
        for (std::size_t i = 0; i < extra.size(); ++i) index_.emplace(extra[i].key, i);
      }
      const auto [it, inserted] = index_.emplace(key_, extra.size());
      if (!inserted) return extra[it->second];
    }
    return extra.emplace_back(extra_member{key_, {}});
  }

  std::string key_;  // the current key, decoded; reused across members
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace

decode_result decode(std::string_view payload) {
  decoder d(payload);
  message m;
  bool ok = true;
  if (payload.substr(0, 3) == "\xEF\xBB\xBF") {
    ok = d.fail("byte-order mark not allowed");
  } else if (!d.skip_ws_more()) {
    ok = false;
  } else if (d.peek() == '{') {
    ok = d.object(m);
  } else {
    if (d.peek() != 'n') {  // top-level null is a no-op: the all-zero message
      if (const char* kind = json_kind(d.peek())) d.note_type_error(kind, "message of type object");
    }
    ok = d.value(nullptr, 0);
  }
  if (ok) {
    d.skip_ws();
    if (!d.at_end()) ok = d.fail_char("after top-level value");
  }
  decode_result r;
  if (!ok) {
    r.error = std::move(d.error);
  } else if (!d.type_error.empty()) {
    r.error = std::move(d.type_error);
  } else {
    lift_body(m);
    r.value = std::move(m);
  }
  return r;
}

}  // namespace spool::mq
