// Shuffles a stream that cannot be permuted as a whole (unbounded, or too big for memory). It
// reads a window of `capacity` examples, hands them out in a seeded random order, then reads
// the next window; at the end of an upstream pass the last window is shorter, and the end is
// passed on after it. So an example moves at most capacity - 1 places, and the capacity should
// span many batches.
//
// Why windows rather than a sliding buffer (tf.data's, where each emitted example is replaced
// by the next one read): window w is permuted by seeded_permutation(rows, seed, w), so the
// position is just the upstream position where the window began plus (w, rows handed out).
// Resuming re-reads that window from upstream. A sliding buffer's position would have to hold
// the buffered examples themselves, copied at every batch the prefetcher tracks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trib/data/example_source.h"

namespace trib::data {

class ShuffleBuffer final : public ExampleSource {
 public:
  ShuffleBuffer(std::unique_ptr<ExampleSource> upstream, std::int64_t capacity, std::uint64_t seed);

  std::optional<Batch> next(std::int64_t max_rows) override;
  // Needs upstream to be able to seek back to where the current window began.
  DataPosition position() const override;
  void seek(const DataPosition& position) override;
  void interrupt() override { upstream_->interrupt(); }

 private:
  // Reads window `window_` from upstream, noting where it began.
  void load_window();
  void unload_window();

  std::unique_ptr<ExampleSource> upstream_;
  std::int64_t capacity_;
  std::uint64_t seed_;

  std::uint64_t window_ = 0;   // index of the loaded window, or of the next one to load
  bool loaded_ = false;
  DataPosition window_start_;  // upstream's position before the loaded window was read
  Batch rows_;                 // the loaded window, in upstream order
  std::vector<std::int64_t> order_;  // the order in which rows_ are handed out
  std::int64_t emitted_ = 0;   // rows of the loaded window handed out so far
  // Upstream ended its pass while filling the window: the end is owed to our caller once
  // the window is used up.
  bool owes_end_ = false;
};

}  // namespace trib::data
