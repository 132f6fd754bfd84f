// The two CRC32C implementations behind trib::crc32c, visible so tests can check each one
// against the known vectors. Both take and return the raw (pre-inverted) register value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trib::checkpoint_detail {

// One table lookup per byte; runs on any CPU.
std::uint32_t crc32c_portable(std::uint32_t crc, const unsigned char* p, std::size_t n);

// Whether this CPU has the SSE4.2 crc32 instruction (always false off x86).
bool cpu_has_sse42();

// The crc32 instruction, 8 bytes at a time. Only call when cpu_has_sse42().
std::uint32_t crc32c_sse42(std::uint32_t crc, const unsigned char* p, std::size_t n);

}  // namespace trib::checkpoint_detail
