// CRC32C with the SSE4.2 crc32 instruction. Only this function is compiled for SSE4.2 (by the
// target attribute), so the library still runs on CPUs without it; crc32c() checks the CPU
// before calling here.
#include <cstring>

#include "checkpoint/crc32c_impl.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace trib::checkpoint_detail {

#if defined(__x86_64__)

bool cpu_has_sse42() { return __builtin_cpu_supports("sse4.2"); }

__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::uint32_t crc, const unsigned char* p,
                                                             std::size_t n) {
  std::uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);  // unaligned-safe; compiles to one load
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

#else

bool cpu_has_sse42() { return false; }

std::uint32_t crc32c_sse42(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  return crc32c_portable(crc, p, n);
}

#endif

}  // namespace trib::checkpoint_detail
