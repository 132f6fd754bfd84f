// The portable table implementation and the dispatch between it and the SSE4.2 one.
#include "checkpoint/crc32c.h"

#include <array>

#include "checkpoint/crc32c_impl.h"

namespace trib {
namespace checkpoint_detail {
namespace {

// Reflected Castagnoli polynomial 0x1EDC6F41.
constexpr std::uint32_t kPolynomial = 0x82F63B78u;

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

}  // namespace

std::uint32_t crc32c_portable(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  static constexpr std::array<std::uint32_t, 256> kTable = make_table();
  for (std::size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return crc;
}

}  // namespace checkpoint_detail

std::uint32_t crc32c(const void* data, std::size_t bytes, std::uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  // The register starts at all ones and the result is inverted; undoing and redoing the
  // inversion is what lets a caller continue from a previous result.
  std::uint32_t reg = ~crc;
  reg = checkpoint_detail::cpu_has_sse42() ? checkpoint_detail::crc32c_sse42(reg, p, bytes)
                                           : checkpoint_detail::crc32c_portable(reg, p, bytes);
  return ~reg;
}

}  // namespace trib
