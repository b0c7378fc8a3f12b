// spool::mq::encode (message-queue.md §3.1), strict validation (§3.3) and UTF-8-safe truncation (§3.4). The
// decisions where the spec leaves room are listed in decode.cpp.
#include <string>
#include <string_view>

#include "common/text/utf8.hpp"
#include "mq/codec/body.hpp"
#include "mq/codec/json.hpp"
#include "spool/error.hpp"
#include "spool/mq/message.hpp"

namespace spool::mq {
namespace {

using namespace detail::codec;

// Appends a value for a strict-mode reason: cut to 64 bytes, quoted, escaped, invalid UTF-8 replaced.
void append_quoted_value(std::string& out, std::string_view v) {
  append_json_string(out, truncate_utf8(v, 64), true);
}

// True when the scanner's whole input is one JSON value (whitespace around it allowed) that may sit inside
// the payload object without exceeding the depth limit.
bool one_value(scanner& s) {
  if (!s.skip_ws_more() || !s.value(nullptr, 1)) return false;
  s.skip_ws();
  return s.at_end() || s.fail_char("after value");
}

[[noreturn]] void throw_invalid(const std::string& text) { throw spool::error(errc::invalid_argument, text); }

void put_field(std::string& out, field f, std::string_view value) {
  out += f == kId ? "\"" : ",\"";
  out += kFieldNames[f];
  out += "\":";
  if (!append_json_string(out, value, false)) {
    throw_invalid(std::string("encode: field ").append(kFieldNames[f]).append(" is not valid UTF-8"));
  }
}

}  // namespace

std::string encode(const message& m) {
  std::size_t size = 96 + m.id.size() + m.pool_code.size() + m.mediation_type.size() +
                     m.mediation_target.size() + m.dispatch_mode.size();
  for (const auto* o : {&m.auth_token, &m.signing_secret, &m.message_group_id}) {
    if (o->has_value()) size += 20 + (*o)->size();
  }
  for (const extra_member& e : m.extra) size += e.key.size() + e.json.size() + 4;
  if (m.body) size += 10 + m.body->size() + m.body->size() / 8;
  for (const auto& a : m.attributes) size += 48 + a.name.size() + a.data_type.size() + a.value.size() * 4 / 3;
  std::string out;
  out.reserve(size + size / 16);
  out += '{';
  put_field(out, kId, m.id);
  if (!m.pool_code.empty()) put_field(out, kPoolCode, m.pool_code);
  if (m.auth_token) put_field(out, kAuthToken, *m.auth_token);
  if (m.signing_secret) put_field(out, kSigningSecret, *m.signing_secret);
  put_field(out, kMediationType, m.mediation_type);
  put_field(out, kMediationTarget, m.mediation_target);
  if (m.message_group_id) put_field(out, kMessageGroupId, *m.message_group_id);
  if (m.high_priority) out += ",\"highPriority\":true";
  if (!m.dispatch_mode.empty()) put_field(out, kDispatchMode, m.dispatch_mode);
  append_body(out, m);
  for (std::size_t i = 0; i < m.extra.size(); ++i) {
    const extra_member& e = m.extra[i];
    out += ',';
    if (!append_json_string(out, e.key, false)) {
      throw_invalid("encode: extra key #" + std::to_string(i) + " is not valid UTF-8");
    }
    if (const field f = match_field(e.key); f != kUnknown) {
      std::string text = "encode: extra key ";
      append_quoted_value(text, e.key);
      throw_invalid(text.append(" matches the known key ").append(kFieldNames[f]));
    }
    scanner s(e.json, true);
    if (!one_value(s)) {
      std::string text = "encode: extra member ";
      append_quoted_value(text, e.key);
      throw_invalid(text.append(" is not one valid JSON value: ").append(s.error));
    }
    const std::size_t first = e.json.find_first_not_of(" \t\n\r");
    const std::size_t last = e.json.find_last_not_of(" \t\n\r");
    out += ':';
    out.append(e.json, first, last + 1 - first);
  }
  out += '}';
  return out;
}

std::string strict_violation(const message& m, std::string_view row_id) {
  if (m.id.empty()) return "strict: empty id";
  if (m.mediation_target.empty()) return "strict: empty mediationTarget";
  std::string text;
  if (m.mediation_type != "HTTP") {
    text = "strict: unknown mediationType ";
    append_quoted_value(text, m.mediation_type);
  } else if (m.id != row_id) {
    text = "strict: payload id ";
    append_quoted_value(text, m.id);
    text += " differs from row id ";
    append_quoted_value(text, row_id);
  }
  return text;
}

std::string truncate_utf8(std::string_view text, std::size_t max_bytes) {
  return spool::detail::utf8_truncate(text, max_bytes);
}

}  // namespace spool::mq
