#include "engine/postgres/arrays.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "common/text/utf8.hpp"
#include "spool/error.hpp"

namespace spool::pg::detail {

std::string text_array(const std::vector<const std::string*>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    if (values[i] == nullptr) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char ch : *values[i]) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
  }
  out += '}';
  return out;
}

namespace {
void put_be32(std::string& out, std::uint32_t v) {
  const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                         static_cast<char>(v)};
  out.append(bytes, 4);
}
}  // namespace

std::string binary_text_array(const std::vector<const std::string*>& values, bool utf8) {
  constexpr std::uint32_t text_oid = 25;
  bool has_null = false;
  std::size_t size = 20;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::string* v = values[i];
    size += 4;
    if (v == nullptr) {
      has_null = true;
      continue;
    }
    size += v->size();
    // As text_params checks a text parameter: the server would refuse both,
    // aborting the caller's transaction.
    if (v->find('\0') != std::string::npos) {
      throw error(errc::invalid_argument,
                  fmt::format("array element {} contains a NUL byte, which PostgreSQL text cannot store", i),
                  "nul_in_text");
    }
    if (utf8 && !spool::detail::is_utf8(*v)) {
      throw error(errc::invalid_argument,
                  fmt::format("array element {} is not valid UTF-8 (the connection's client_encoding)", i),
                  "invalid_encoding");
    }
  }
  std::string out;
  out.reserve(size);
  // array_recv's layout: dimensions, a has-nulls flag, the element type, each
  // dimension's length and lower bound, then each element as its length (-1
  // for NULL) and its bytes.
  put_be32(out, values.empty() ? 0 : 1);
  put_be32(out, has_null ? 1 : 0);
  put_be32(out, text_oid);
  if (!values.empty()) {
    put_be32(out, static_cast<std::uint32_t>(values.size()));
    put_be32(out, 1);
  }
  for (const std::string* v : values) {
    if (v == nullptr) {
      put_be32(out, 0xFFFFFFFFU);
    } else {
      put_be32(out, static_cast<std::uint32_t>(v->size()));
      out += *v;
    }
  }
  return out;
}

}  // namespace spool::pg::detail
