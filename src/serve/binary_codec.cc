#include "serve/binary_codec.h"

#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "serve/request_error.h"

namespace trib::serve {

static_assert(std::endian::native == std::endian::little, "the binary form is little-endian, read in place");

namespace {

constexpr std::size_t kFixedHeader = 8;  // magic, version, rank
constexpr std::uint16_t kMaxRank = 8;

template <typename T>
T read_le(std::string_view body, std::size_t at) {
  T v;
  std::memcpy(&v, body.data() + at, sizeof(T));
  return v;
}

}  // namespace

Tensor parse_binary_request(std::string_view body, const RequestSpec& spec) {
  if (body.size() < kFixedHeader || std::memcmp(body.data(), kBinaryMagic, 4) != 0)
    throw RequestError(400, "the binary body does not start with the magic \"TRBT\" (docs/serving.md has the format)");
  const auto version = read_le<std::uint16_t>(body, 4);
  if (version != kBinaryVersion)
    throw RequestError(400, fmt::format("binary format version {}: this server reads version {}", version,
                                        kBinaryVersion));
  const auto rank = read_le<std::uint16_t>(body, 6);
  if (rank < 2 || rank > kMaxRank)
    throw RequestError(400, fmt::format("binary rank {}: expected 2 to {} (the batch dimension first)", rank, kMaxRank));
  const std::size_t header = kFixedHeader + 4u * rank;
  if (body.size() < header)
    throw RequestError(400, fmt::format("binary body of {} bytes is shorter than its {}-byte header", body.size(), header));
  // Sizes are checked against the model's input and the batch limit, never multiplied as
  // sent: eight 32-bit dimensions would overflow.
  std::vector<std::int64_t> dims;
  for (std::uint16_t i = 0; i < rank; ++i) dims.push_back(read_le<std::uint32_t>(body, kFixedHeader + 4u * i));
  const std::int64_t rows = dims[0];
  if (rows < 1) throw RequestError(400, "binary batch dimension is 0: expected at least one row");
  if (rows > spec.max_batch)
    throw RequestError(413, fmt::format("{} rows in one request: at most {} (--max-batch)", rows, spec.max_batch));
  std::vector<std::int64_t> rest(dims.begin() + 1, dims.end());
  const bool exact = Shape(rest) == spec.input;
  const bool flat = rest.size() == 1 && rest[0] == spec.input.numel();
  if (!exact && !flat)
    throw RequestError(400, fmt::format("binary shape [{}] does not fit the model's input: expected [rows, {}] or "
                                        "[rows, {}]",
                                        fmt::join(dims, ", "), fmt::join(spec.input.dims(), ", "), spec.input.numel()));
  const std::int64_t width = spec.input.numel();
  const std::size_t payload = static_cast<std::size_t>(rows * width) * sizeof(float);
  if (body.size() - header != payload)
    throw RequestError(400, fmt::format("binary body holds {} bytes of values but shape [{}] needs {}",
                                        body.size() - header, fmt::join(dims, ", "), payload));
  Tensor t = Tensor::empty(DType::f32, Shape{rows, width});
  std::memcpy(t.data<float>(), body.data() + header, payload);
  check_finite(t.data<float>(), rows, width);
  return t;
}

std::string encode_binary(const Tensor& values) {
  const auto& dims = values.shape().dims();
  std::string out(kFixedHeader + 4 * dims.size() + values.nbytes(), '\0');
  std::memcpy(out.data(), kBinaryMagic, 4);
  const std::uint16_t version = kBinaryVersion, rank = static_cast<std::uint16_t>(dims.size());
  std::memcpy(out.data() + 4, &version, 2);
  std::memcpy(out.data() + 6, &rank, 2);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<std::uint32_t>(dims[i]);
    std::memcpy(out.data() + kFixedHeader + 4 * i, &d, 4);
  }
  std::memcpy(out.data() + kFixedHeader + 4 * dims.size(), values.data<float>(), values.nbytes());
  return out;
}

}  // namespace trib::serve
