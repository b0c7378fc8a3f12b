// UTF-8 well-formedness shared by the engine layer and the components.
#pragma once

#include <string_view>

namespace spool::detail {

// True when s is well-formed UTF-8 (RFC 3629: no overlong forms, no UTF-16
// surrogates, nothing above U+10FFFF). NUL is a valid code point here.
[[nodiscard]] bool is_utf8(std::string_view s) noexcept;

}  // namespace spool::detail
