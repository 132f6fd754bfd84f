// Ring allreduce, pulled: reduce-scatter then allgather, as 2(N-1) steps of one block each,
// every block cut into segments. Rank r asks its left neighbour for each (step, segment)
// ahead of need (GroupOptions::pipeline_depth requests in flight); the neighbour answers
// once that piece is ready, straight from its tensor (no copy), and the reply lands in a
// scratch slot (reduce-scatter: then added in) or straight in place (allgather). So while
// the caller's thread adds one segment, the transport's threads send the next and receive
// the one after: sending, receiving and reducing overlap.
//
// Step i, rank r: reduce-scatter (i < N-1) receives block r-i-1 and sends block r-i;
// allgather step s = i-(N-1) receives block r-s and sends block r+1-s. The piece sent at
// step i > 0 is the one received (and reduced) at step i-1, so it is ready once the caller
// has finished item (i-1, j); items are finished in order, so one counter tells.
#include <fmt/format.h>

#include "collectives/active_op.h"
#include "collectives/allreduce_internal.h"
#include "collectives/segment_plan.h"
#include "collectives/tensor_view.h"

namespace trib::collectives::detail {
namespace {

struct Ring {
  int rank, size;
  SegmentPlan plan;
  std::int64_t steps() const { return 2 * static_cast<std::int64_t>(size - 1); }
  std::int64_t items() const { return steps() * plan.segments(); }
  int received_block(std::int64_t step) const {
    return step < size - 1 ? mod(rank - static_cast<int>(step) - 1, size)
                           : mod(rank - static_cast<int>(step - (size - 1)), size);
  }
  int sent_block(std::int64_t step) const {
    return step < size - 1 ? mod(rank - static_cast<int>(step), size)
                           : mod(rank + 1 - static_cast<int>(step - (size - 1)), size);
  }
};

class RingServer final : public OpServer {
 public:
  RingServer(GroupCore& core, Tensor tensor, Ring ring, std::optional<Wire16> wire)
      : core_(core), tensor_(std::move(tensor)), ring_(std::move(ring)), wire_(wire) {}

  net::Message serve(const Request& r, const std::shared_ptr<OpState>& op) override {
    const std::int64_t S = ring_.plan.segments();
    TRIB_CHECK(r.from == mod(ring_.rank + 1, ring_.size) && r.step < ring_.steps() && r.segment < S,
               Error, "rank {} asked rank {} for ring piece ({}, {}) out of turn", r.from, ring_.rank,
               r.step, r.segment);
    if (r.step > 0) {
      const std::uint64_t needed = (r.step - 1) * S + r.segment + 1;
      std::unique_lock lock(core_.mu());
      core_.wait(lock, op->deadline, [&] { return op->progress >= needed; },
                 [&] { return fmt::format("rank {} to reduce ring piece ({}, {})", ring_.rank, r.step - 1, r.segment); });
    }
    const int block = ring_.sent_block(r.step);
    const std::int64_t begin = ring_.plan.segment_begin(block, r.segment);
    const std::int64_t length = ring_.plan.segment_length(block, r.segment);
    if (!wire_) return net::Message{0, "", core_.serve_view(op, tensor_, begin, length)};
    Tensor packed = Tensor::empty(DType::i32, Shape{packed_elements(length)}, core_.pool());
    auto* out = static_cast<std::uint16_t*>(packed.raw_data());
    pack16(*wire_, tensor_.data<float>() + begin, out, length);
    if (length % 2 != 0) out[length] = 0;
    return net::Message{0, "", core_.serve_made(op, packed)};
  }

 private:
  GroupCore& core_;
  Tensor tensor_;
  Ring ring_;
  std::optional<Wire16> wire_;
};

}  // namespace

void ring_allreduce(Group& group, const Tensor& tensor, const AllreduceOptions& options) {
  const auto wire = wire_format(options.compression);
  const std::size_t wire_element = wire ? 2 : dtype_size(tensor.dtype());
  const auto segment_elements = static_cast<std::int64_t>(group.options().segment_bytes / wire_element);
  Ring ring{group.rank(), group.size(), SegmentPlan::balanced(tensor.numel(), group.size(), segment_elements)};
  const int left = mod(ring.rank - 1, ring.size);
  const std::int64_t S = ring.plan.segments();
  const std::int64_t total = ring.items();
  const auto depth = static_cast<std::int64_t>(group.options().pipeline_depth);
  const float inverse = 1.0f / static_cast<float>(ring.size);

  // Scratch for replies that are not received in place: one slot per request in flight.
  const std::size_t slot_bytes = wire ? 4 * static_cast<std::size_t>(packed_elements(ring.plan.max_segment_length()))
                                      : static_cast<std::size_t>(ring.plan.max_segment_length()) * wire_element;
  Tensor scratch = Tensor::empty(DType::i32, Shape{static_cast<std::int64_t>((slot_bytes * depth + 3) / 4)},
                                 group.core().pool());

  auto server = std::make_shared<RingServer>(group.core(), tensor, ring, wire);
  ActiveOp op(group, allreduce_spec(tensor, options, Algorithm::ring), server, options.timeout);
  op.run([&] {
    std::vector<std::future<net::Message>> replies(static_cast<std::size_t>(depth));
    auto slot = [&](std::int64_t item) { return static_cast<std::size_t>(item % depth); };
    auto post = [&](std::int64_t item) {
      const std::int64_t step = item / S, j = item % S;
      const int block = ring.received_block(step);
      const std::int64_t length = ring.plan.segment_length(block, j);
      Tensor into;
      if (wire) {
        into = byte_view(scratch, slot(item) * slot_bytes, 4 * static_cast<std::size_t>(packed_elements(length)), DType::i32);
      } else if (step < ring.size - 1) {
        into = byte_view(scratch, slot(item) * slot_bytes, static_cast<std::size_t>(length) * wire_element, tensor.dtype());
      } else {
        into = flat_view(tensor, ring.plan.segment_begin(block, j), length);
      }
      replies[slot(item)] = op.ask(left, op.request(static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(j)), into);
    };
    for (std::int64_t item = 0; item < std::min(depth, total); ++item) post(item);
    auto* base = static_cast<std::byte*>(tensor.raw_data());
    const auto* scratch_base = static_cast<const std::byte*>(scratch.raw_data());
    for (std::int64_t item = 0; item < total; ++item) {
      op.await(replies[slot(item)], left);
      const std::int64_t step = item / S, j = item % S;
      const int block = ring.received_block(step);
      const std::int64_t begin = ring.plan.segment_begin(block, j), length = ring.plan.segment_length(block, j);
      const std::byte* got = scratch_base + slot(item) * slot_bytes;
      if (step < ring.size - 1) {
        if (wire) {
          add16_into(*wire, tensor.data<float>() + begin, reinterpret_cast<const std::uint16_t*>(got), length);
        } else {
          add_into(tensor.dtype(), base + begin * wire_element, got, length);
        }
        if (step == ring.size - 2) {  // this block is complete here: finish it before it is sent on
          if (options.average) scale(tensor.data<float>() + begin, length, inverse);
          if (wire) round_through16(*wire, tensor.data<float>() + begin, length);
        }
      } else if (wire) {
        unpack16(*wire, reinterpret_cast<const std::uint16_t*>(got), tensor.data<float>() + begin, length);
      }
      op.advance();
      if (item + depth < total) post(item + depth);
    }
    op.wait_served(static_cast<std::uint64_t>(total));
  });
}

}  // namespace trib::collectives::detail
