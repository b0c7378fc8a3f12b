#include "mq/codec/body.hpp"

#include <nlohmann/json.hpp>

#include "common/text/base64.hpp"
#include "mq/codec/json.hpp"
#include "spool/error.hpp"

namespace spool::mq::detail::codec {

namespace {

bool is_binary(std::string_view data_type) { return data_type.substr(0, 6) == "Binary"; }

// The attributes of a "messageAttributes" value, or nullopt when its shape is not ours.
std::optional<std::vector<message_attribute>> attributes_of(const std::string& json) {
  const auto v = nlohmann::ordered_json::parse(json, nullptr, false);
  if (v.is_discarded() || !v.is_object()) return std::nullopt;
  std::vector<message_attribute> out;
  for (const auto& [name, a] : v.items()) {
    if (!a.is_object() || !a.contains("dataType") || !a["dataType"].is_string()) return std::nullopt;
    message_attribute attr{name, a["dataType"].get<std::string>(), {}};
    const char* key = is_binary(attr.data_type) ? "binaryValue" : "stringValue";
    if (!a.contains(key) || !a[key].is_string()) return std::nullopt;
    if (is_binary(attr.data_type)) {
      auto bytes = spool::detail::base64_decode(a[key].get<std::string>());
      if (!bytes) return std::nullopt;
      attr.value = std::move(*bytes);
    } else {
      attr.value = a[key].get<std::string>();
    }
    out.push_back(std::move(attr));
  }
  return out;
}

// The text of an extra value that is a JSON string, or nullopt. The value is
// the decoder's compact re-encoding (valid UTF-8, minimal escapes), so the
// codec's own scanner reads it in one pass; nlohmann's parser took eight times
// the instructions for a 200-byte body (docs/SQS.md).
std::optional<std::string> string_of(std::string_view json) {
  if (json.empty() || json.front() != '"') return std::nullopt;
  scanner s(json, false);
  std::string text;
  text.reserve(json.size());
  if (!s.string<str_mode::decode>(&text) || !s.at_end()) return std::nullopt;
  return text;
}

void put_string(std::string& out, std::string_view s, const char* what) {
  if (!append_json_string(out, s, false)) {
    throw spool::error(errc::invalid_argument, std::string("encode: ") + what + " is not valid UTF-8");
  }
}

}  // namespace

void lift_body(message& m) {
  for (auto it = m.extra.begin(); it != m.extra.end();) {
    bool lifted = false;
    if (it->key == kBodyKey && !m.body) {
      if (auto body = string_of(it->json)) {
        m.body = std::move(*body);
        lifted = true;
      }
    } else if (it->key == kAttributesKey && m.attributes.empty()) {
      if (auto attrs = attributes_of(it->json)) {
        m.attributes = std::move(*attrs);
        lifted = true;
      }
    }
    it = lifted ? m.extra.erase(it) : it + 1;
  }
}

void append_body(std::string& out, const message& m) {
  for (const auto& e : m.extra) {
    if ((m.body && e.key == kBodyKey) || (!m.attributes.empty() && e.key == kAttributesKey)) {
      throw spool::error(errc::invalid_argument,
                         "encode: extra member " + e.key + " repeats the message's " + e.key);
    }
  }
  if (m.body) {
    out += ",\"body\":";
    put_string(out, *m.body, "the body");
  }
  if (m.attributes.empty()) return;
  out += ",\"messageAttributes\":{";
  for (std::size_t i = 0; i < m.attributes.size(); ++i) {
    const auto& a = m.attributes[i];
    if (i != 0) out += ',';
    put_string(out, a.name, "an attribute name");
    out += ":{\"dataType\":";
    put_string(out, a.data_type, "an attribute's data type");
    if (is_binary(a.data_type)) {
      out += ",\"binaryValue\":\"" + spool::detail::base64_encode(a.value) + "\"}";
    } else {
      out += ",\"stringValue\":";
      put_string(out, a.value, "a string attribute");
      out += '}';
    }
  }
  out += '}';
}

}  // namespace spool::mq::detail::codec
