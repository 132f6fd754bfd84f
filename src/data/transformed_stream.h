// Applies transforms, in order, to every batch of a stream.
#pragma once

#include <memory>
#include <vector>

#include "trib/data/batch_stream.h"
#include "trib/data/transforms.h"

namespace trib::data {

class TransformedStream final : public BatchStream {
 public:
  TransformedStream(std::unique_ptr<BatchStream> upstream, std::vector<BatchTransform> transforms);

  std::optional<Batch> next() override;
  DataPosition position() const override { return upstream_->position(); }
  void seek(const DataPosition& position) override { upstream_->seek(position); }
  void interrupt() override { upstream_->interrupt(); }

 private:
  std::unique_ptr<BatchStream> upstream_;
  std::vector<BatchTransform> transforms_;
};

}  // namespace trib::data
