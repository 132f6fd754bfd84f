// The binary batch form (Content-Type: application/octet-stream; docs/serving.md): a header
// then f32 values, all little-endian, C order.
//
//   offset 0   4 bytes    magic "TRBT"
//   offset 4   u16        version, 1
//   offset 6   u16        rank R, 2..8 (the batch dimension included)
//   offset 8   R x u32    dimensions, the first the batch (rows)
//   then       f32 x product(dimensions)
//
// A request's dimensions after the batch are the model's input shape, or its element count
// ([rows, 784] for a [1, 28, 28] input). The response has the same framing: [rows, classes]
// logits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "serve/request_spec.h"
#include "trib/core/tensor.h"

namespace trib::serve {

inline constexpr char kBinaryMagic[4] = {'T', 'R', 'B', 'T'};
inline constexpr std::uint16_t kBinaryVersion = 1;

// Features [rows, input element count]. Throws RequestError naming what does not fit.
Tensor parse_binary_request(std::string_view body, const RequestSpec& spec);

// Encodes a tensor of f32 in the framing above (a response's logits; a client's request).
std::string encode_binary(const Tensor& values);

}  // namespace trib::serve
