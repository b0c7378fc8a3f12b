// The message's first-class body and attributes on the wire: the members
// "body" and "messageAttributes" after the nine legacy keys (see
// spool/mq/message.hpp). Thread safety: pure functions.
#pragma once

#include <string>

#include "spool/mq/message.hpp"

namespace spool::mq::detail::codec {

inline constexpr std::string_view kBodyKey = "body";
inline constexpr std::string_view kAttributesKey = "messageAttributes";

// Moves decoded extra members "body" (a JSON string) and "messageAttributes"
// (an object of attribute objects) into m.body and m.attributes; members of
// any other shape stay in extra, as a legacy decoder would keep them.
void lift_body(message& m);
// Appends ,"body":… and ,"messageAttributes":{…} for the set fields. Throws
// spool::error(invalid_argument) for a body or a string attribute that is not
// valid UTF-8, or an extra member that repeats one of the two keys.
void append_body(std::string& out, const message& m);

}  // namespace spool::mq::detail::codec
