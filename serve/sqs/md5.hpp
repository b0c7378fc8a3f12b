// The checksums SQS returns and the SDKs verify: MD5OfMessageBody and
// MD5OfMessageAttributes (each attribute sorted by name, as length-prefixed
// name, data type, a transport byte — 1 string, 2 binary — and value).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "spool/mq/message.hpp"

namespace spool::serve::sqs {

// Lower-case hex MD5 of data. Pure.
[[nodiscard]] std::string md5_hex(std::string_view data);
// The MD5 of message attributes as SQS computes it; empty for none. Pure.
[[nodiscard]] std::string md5_of_attributes(const std::vector<mq::message_attribute>& attributes);

}  // namespace spool::serve::sqs
