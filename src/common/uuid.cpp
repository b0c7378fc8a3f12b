#include "common/uuid.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string_view>

namespace spool::detail {

namespace {

// One well-seeded generator per thread: no locking on the hot path.
std::mt19937_64& rng() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  return gen;
}

std::string format(const std::array<std::uint8_t, 16>& b) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex[b[i] >> 4];
    out += hex[b[i] & 0xf];
  }
  return out;
}

}  // namespace

std::string uuid_v4() {
  std::array<std::uint8_t, 16> b{};
  const std::uint64_t hi = rng()(), lo = rng()();
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<std::uint8_t>(hi >> (56 - 8 * i));
    b[8 + i] = static_cast<std::uint8_t>(lo >> (56 - 8 * i));
  }
  b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);
  return format(b);
}

std::string uuid_v7() {
  // RFC 9562 method 1: a 12-bit counter in rand_a, seeded randomly in its
  // lower half each new millisecond; on overflow the timestamp advances.
  static std::mutex mutex;
  static std::uint64_t last_ms = 0;
  static std::uint32_t counter = 0;
  std::uint64_t ms;
  std::uint32_t seq;
  {
    std::lock_guard lock(mutex);
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
    if (now > last_ms) {
      last_ms = now;
      counter = static_cast<std::uint32_t>(rng()() & 0x7ff);
    } else if (++counter > 0xfff) {
      ++last_ms;
      counter = 0;
    }
    ms = last_ms;
    seq = counter;
  }
  std::array<std::uint8_t, 16> b{};
  for (int i = 0; i < 6; ++i) b[i] = static_cast<std::uint8_t>(ms >> (40 - 8 * i));
  b[6] = static_cast<std::uint8_t>(0x70 | ((seq >> 8) & 0x0f));
  b[7] = static_cast<std::uint8_t>(seq & 0xff);
  const std::uint64_t r = rng()();
  for (int i = 0; i < 8; ++i) b[8 + i] = static_cast<std::uint8_t>(r >> (56 - 8 * i));
  b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);
  return format(b);
}

bool is_uuid(std::string_view s) noexcept {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < 36; ++i) {
    const char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

}  // namespace spool::detail
