#include "serve/sqs/md5.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

#include "serve/digests.hpp"

namespace spool::serve::sqs {

std::string md5_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, &md5_digest(), nullptr);
  static constexpr char digits[] = "0123456789abcdef";
  const std::size_t n = len;
  std::string hex(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    hex[2 * i] = digits[out[i] >> 4];
    hex[2 * i + 1] = digits[out[i] & 0xF];
  }
  return hex;
}

namespace {
void length_prefixed(std::string& out, std::string_view s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  out += static_cast<char>((n >> 24) & 0xFF);
  out += static_cast<char>((n >> 16) & 0xFF);
  out += static_cast<char>((n >> 8) & 0xFF);
  out += static_cast<char>(n & 0xFF);
  out += s;
}
}  // namespace

std::string md5_of_attributes(const std::vector<mq::message_attribute>& attributes) {
  if (attributes.empty()) return {};
  std::vector<const mq::message_attribute*> sorted;
  sorted.reserve(attributes.size());
  for (const auto& a : attributes) sorted.push_back(&a);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  std::string bytes;
  for (const auto* a : sorted) {
    length_prefixed(bytes, a->name);
    length_prefixed(bytes, a->data_type);
    const bool binary = a->data_type.rfind("Binary", 0) == 0;
    bytes += static_cast<char>(binary ? 2 : 1);
    length_prefixed(bytes, a->value);
  }
  return md5_hex(bytes);
}

}  // namespace spool::serve::sqs
