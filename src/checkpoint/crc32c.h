// CRC32C (Castagnoli polynomial, as in iSCSI, ext4 and Kafka record batches). Uses the SSE4.2
// crc32 instruction where the CPU has it and a table otherwise; both give the same values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace trib {

// The CRC32C of `bytes`. Passing the CRC of earlier data as `crc` continues it:
// crc32c(b, crc32c(a)) == crc32c(a followed by b).
std::uint32_t crc32c(const void* data, std::size_t bytes, std::uint32_t crc = 0);
inline std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t crc = 0) {
  return crc32c(bytes.data(), bytes.size(), crc);
}

}  // namespace trib
