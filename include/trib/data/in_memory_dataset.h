// A dataset held in memory: labels as i32 and features either as f32 or, for images, as the
// file's bytes. Bytes stay bytes (a quarter of the memory: 47 MB instead of 188 MB for
// Fashion-MNIST) and are widened to f32, times a scale, only for the rows being batched.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "trib/core/shape.h"
#include "trib/data/dataset.h"

namespace trib::data {

class InMemoryDataset final : public Dataset {
 public:
  // `features` holds labels.size() examples of `example_shape`, row after row. A gathered
  // byte becomes float(byte) * byte_scale (1/255 maps pixels to [0, 1]).
  static InMemoryDataset from_bytes(Shape example_shape, std::vector<std::uint8_t> features,
                                    std::vector<std::int32_t> labels, float byte_scale = 1.0f);
  // The same over bytes held elsewhere (a mapped file), kept alive by `owner` for as long as
  // the dataset or a copy of it lives: nothing is copied.
  static InMemoryDataset from_byte_view(Shape example_shape, std::shared_ptr<const void> owner,
                                        std::span<const std::uint8_t> features, std::vector<std::int32_t> labels,
                                        float byte_scale = 1.0f);
  static InMemoryDataset from_floats(Shape example_shape, std::vector<float> features,
                                     std::vector<std::int32_t> labels);

  std::int64_t size() const override { return static_cast<std::int64_t>(labels_.size()); }
  Batch gather(std::span<const std::int64_t> indices) const override;

  const Shape& example_shape() const { return example_shape_; }
  std::span<const std::int32_t> labels() const { return labels_; }
  // Whether features are kept as bytes; then byte_features() holds them, else float_features().
  bool stores_bytes() const { return stores_bytes_; }
  std::span<const std::uint8_t> byte_features() const { return bytes_; }
  std::span<const float> float_features() const { return floats_; }
  float byte_scale() const { return byte_scale_; }

 private:
  InMemoryDataset(Shape example_shape, bool stores_bytes, std::shared_ptr<const void> byte_owner,
                  std::span<const std::uint8_t> bytes, std::vector<float> floats, std::vector<std::int32_t> labels,
                  float byte_scale);

  Shape example_shape_;
  bool stores_bytes_;
  // The bytes live in whatever byte_owner_ holds (a vector, a mapping): moving or copying the
  // dataset never moves them, so bytes_ stays valid.
  std::shared_ptr<const void> byte_owner_;
  std::span<const std::uint8_t> bytes_;
  std::vector<float> floats_;
  std::vector<std::int32_t> labels_;
  float byte_scale_ = 1.0f;
};

}  // namespace trib::data
