// Little-endian loads and stores for wire fields, independent of the host's byte order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trib::net {

template <typename T>
void store_le(std::byte* out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<std::byte>(static_cast<std::uint64_t>(value) >> (8 * i));
  }
}

template <typename T>
T load_le(const std::byte* in) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= std::uint64_t{std::to_integer<std::uint8_t>(in[i])} << (8 * i);
  }
  return static_cast<T>(value);
}

}  // namespace trib::net
