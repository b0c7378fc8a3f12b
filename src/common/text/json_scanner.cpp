// The scanner's out-of-line helper (json_scanner.hpp).
#include "common/text/json_scanner.hpp"

namespace spool::detail::json_lex {

void append_quoted_char(std::string& out, unsigned char c) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '\'';
  if (c == '\'' || c == '\\') {
    out += '\\';
    out += static_cast<char>(c);
  } else if (c >= 0x20 && c < 0x7F) {
    out += static_cast<char>(c);
  } else {
    const char b[4] = {'\\', 'x', hex[c >> 4], hex[c & 0xF]};
    out.append(b, 4);
  }
  out += '\'';
}

}  // namespace spool::detail::json_lex
