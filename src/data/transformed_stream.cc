#include "data/transformed_stream.h"

#include "trib/core/error.h"

namespace trib::data {

TransformedStream::TransformedStream(std::unique_ptr<BatchStream> upstream,
                                     std::vector<BatchTransform> transforms)
    : upstream_(std::move(upstream)), transforms_(std::move(transforms)) {
  TRIB_CHECK(upstream_ != nullptr, InvalidArgument, "TransformedStream needs an upstream, got null");
  for (const auto& t : transforms_)
    TRIB_CHECK(static_cast<bool>(t), InvalidArgument, "TransformedStream got an empty transform");
}

std::optional<Batch> TransformedStream::next() {
  std::optional<Batch> batch = upstream_->next();
  if (!batch) return batch;
  for (const auto& transform : transforms_) batch = transform(std::move(*batch));
  return batch;
}

}  // namespace trib::data
