// Element types a tensor can hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trib {

enum class DType : std::uint8_t { f32 = 0, i32 = 1, i64 = 2 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "unknown";
}

// Parses "f32", "i32" or "i64"; throws InvalidArgument naming the text otherwise.
DType parse_dtype(std::string_view name);

// Whether a raw byte read from a file or the wire names a known dtype.
constexpr bool is_valid_dtype(std::uint8_t raw) { return raw <= 2; }

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::i64; }

}  // namespace trib
