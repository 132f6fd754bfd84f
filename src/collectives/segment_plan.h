// How a ring algorithm cuts a tensor: into one block per rank, and every block into the
// same number of segments, the pipeline's unit. Every rank computes the same plan from the
// same sizes, so a request names a piece by (step, segment) alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace trib::collectives::detail {

class SegmentPlan {
 public:
  // Blocks of the given element counts (laid out one after another), each cut into
  // segments of at most `max_segment_elements` (the largest block decides the count).
  SegmentPlan(std::vector<std::int64_t> block_elements, std::int64_t max_segment_elements)
      : lengths_(std::move(block_elements)) {
    std::int64_t offset = 0, largest = 0;
    for (std::int64_t len : lengths_) {
      begins_.push_back(offset);
      offset += len;
      largest = std::max(largest, len);
    }
    const std::int64_t unit = std::max<std::int64_t>(1, max_segment_elements);
    segments_ = std::max<std::int64_t>(1, (largest + unit - 1) / unit);
  }

  // `numel` elements in `blocks` blocks as equal as can be (sizes differ by at most one).
  static SegmentPlan balanced(std::int64_t numel, int blocks, std::int64_t max_segment_elements) {
    std::vector<std::int64_t> lengths;
    for (int b = 0; b < blocks; ++b) lengths.push_back(numel * (b + 1) / blocks - numel * b / blocks);
    return SegmentPlan(std::move(lengths), max_segment_elements);
  }

  int blocks() const { return static_cast<int>(lengths_.size()); }
  std::int64_t segments() const { return segments_; }
  std::int64_t block_begin(int b) const { return begins_[static_cast<std::size_t>(b)]; }
  std::int64_t block_length(int b) const { return lengths_[static_cast<std::size_t>(b)]; }
  // Segment j of block b: its first element (in the whole tensor) and its length.
  std::int64_t segment_begin(int b, std::int64_t j) const {
    return block_begin(b) + block_length(b) * j / segments_;
  }
  std::int64_t segment_length(int b, std::int64_t j) const {
    return block_length(b) * (j + 1) / segments_ - block_length(b) * j / segments_;
  }
  std::int64_t max_segment_length() const {
    std::int64_t m = 0;
    for (int b = 0; b < blocks(); ++b) m = std::max(m, (block_length(b) + segments_ - 1) / segments_);
    return m;
  }

 private:
  std::vector<std::int64_t> lengths_;
  std::vector<std::int64_t> begins_;
  std::int64_t segments_ = 1;
};

inline int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace trib::collectives::detail
