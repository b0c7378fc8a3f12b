// JSON string writer (json_string.hpp). Bodies, receipts and ids are mostly
// characters that need no escape, so such runs are copied at once and each
// byte costs one table look-up.
#include "common/text/json_string.hpp"

#include "common/text/utf8.hpp"

namespace spool::detail {

void append_json_escape(std::string& out, unsigned char c) {
  static constexpr char hex[] = "0123456789abcdef";
  char short_form = 0;
  switch (c) {
    case '"':
      short_form = '"';
      break;
    case '\\':
      short_form = '\\';
      break;
    case '\b':
      short_form = 'b';
      break;
    case '\f':
      short_form = 'f';
      break;
    case '\n':
      short_form = 'n';
      break;
    case '\r':
      short_form = 'r';
      break;
    case '\t':
      short_form = 't';
      break;
    default:
      break;
  }
  if (short_form != 0) {
    const char b[2] = {'\\', short_form};
    out.append(b, 2);
    return;
  }
  const char b[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
  out.append(b, 6);
}

bool append_json_string(std::string& out, std::string_view s, bool replace) {
  out.reserve(out.size() + s.size() + 2);
  out.push_back('"');
  std::size_t run = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (json_plain_ascii[c]) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (const std::size_t n = utf8_sequence(s, i)) {
        i += n;
        continue;
      }
      if (!replace) return false;
      out.append(s, run, i - run);
      out += utf8_replacement;
    } else {
      out.append(s, run, i - run);
      append_json_escape(out, c);
    }
    run = ++i;
  }
  out.append(s, run, s.size() - run);
  out.push_back('"');
  return true;
}

}  // namespace spool::detail
