// Array parameters for UNNEST: a batch's column of values as one text[]
// parameter, in text or in binary format.
#pragma once

#include <string>
#include <vector>

namespace spool::pg::detail {

// Encodes values as a PostgreSQL text[] literal ({"a",NULL,"b"}), for UNNEST.
std::string text_array(const std::vector<const std::string*>& values);
// The same text[] in binary format (array_recv's), for a parameter marked in
// a binary_mask: nothing to quote here or to unquote on the server, which
// parses a large batch's text literal at several µs per value (issue 13).
// A null pointer is NULL. utf8: the connection's client_encoding is UTF8.
// Errors: invalid_argument (nul_in_text, invalid_encoding), as a text
// parameter's.
std::string binary_text_array(const std::vector<const std::string*>& values, bool utf8);

}  // namespace spool::pg::detail
