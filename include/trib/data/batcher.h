// Groups examples into batches of a fixed size. The last batch of an epoch is smaller unless
// drop_last is set, in which case it is dropped: that keeps batch shapes constant (no graph
// re-specialisation) at the cost of < batch_size examples per epoch.
#pragma once

#include <cstdint>
#include <memory>

#include "trib/data/batch_stream.h"
#include "trib/data/example_source.h"

namespace trib::data {

class Batcher final : public BatchStream {
 public:
  Batcher(std::unique_ptr<ExampleSource> upstream, std::int64_t batch_size, bool drop_last);

  std::optional<Batch> next() override;
  DataPosition position() const override;
  void seek(const DataPosition& position) override;
  void interrupt() override { upstream_->interrupt(); }

 private:
  std::unique_ptr<ExampleSource> upstream_;
  std::int64_t batch_size_;
  bool drop_last_;
  // A short final batch was returned, which used up upstream's end of epoch; the end is still
  // owed to our caller.
  bool owes_end_ = false;
};

}  // namespace trib::data
