// Per-batch transforms: functions from a batch to a batch, applied after batching so that each
// runs one vectorisable loop over the whole batch. They may modify the batch's tensors in
// place: sources hand out fresh tensors for every batch.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trib/core/dtype.h"
#include "trib/data/batch.h"
#include "trib/data/dataset.h"

namespace trib::data {

using BatchTransform = std::function<Batch(Batch)>;

// x -> (x - mean) / stddev on an f32 field. Each of mean and stddev holds either one value for
// every element, or one per element of an example (784 for a 28x28 image).
BatchTransform normalize(std::vector<float> mean, std::vector<float> stddev,
                         std::string_view field = Batch::kFeatures);

// x -> x * factor on an f32 field; scale(1.0f / 255) maps raw pixels to [0, 1].
BatchTransform scale(float factor, std::string_view field = Batch::kFeatures);

// Converts a field to another dtype (float to integer truncates toward zero).
BatchTransform cast(std::string_view field, DType to);

// The same conversion on one tensor: a new tensor, or `value` itself when it already has that dtype.
Tensor cast_tensor(const Tensor& value, DType to);

// Per-element mean and standard deviation of a dataset's features, as normalize() takes them.
// Reads the dataset in chunks, accumulating in double. A constant element gets stddev 1, so
// that normalising only centres it.
struct FeatureStats {
  std::vector<float> mean;
  std::vector<float> stddev;
};
FeatureStats compute_feature_stats(const Dataset& dataset);

}  // namespace trib::data
