// Direct allreduce: every rank fetches every other rank's tensor and sums all N in rank
// order, x0 + x1 + ... + x(N-1), so that every rank forms the same sum bit for bit. One
// step, so it is latency-optimal for small tensors; each rank sends (N-1) times its tensor,
// so the ring takes over above GroupOptions::small_bytes.
//
// Pipelined: the tensor is fetched in segments, pipeline_depth ahead from every peer. The
// reply to a peer is a view of the caller's tensor, so segment j is overwritten with the
// sum only once every peer has fetched it (the transport released the views).
#include <fmt/format.h>

#include <cstring>

#include "collectives/active_op.h"
#include "collectives/allreduce_internal.h"
#include "collectives/segment_plan.h"
#include "collectives/tensor_view.h"

namespace trib::collectives::detail {
namespace {

class DirectServer final : public OpServer {
 public:
  DirectServer(GroupCore& core, Tensor tensor, SegmentPlan plan, std::optional<Wire16> wire)
      : core_(core), tensor_(std::move(tensor)), plan_(std::move(plan)), wire_(wire),
        released_(static_cast<std::size_t>(plan_.segments()), 0) {}

  net::Message serve(const Request& r, const std::shared_ptr<OpState>& op) override {
    TRIB_CHECK(r.segment < plan_.segments(), Error, "rank {} asked for direct segment {} of {}", r.from, r.segment,
               plan_.segments());
    std::uint64_t* released = &released_[r.segment];
    const std::int64_t begin = plan_.segment_begin(0, r.segment), length = plan_.segment_length(0, r.segment);
    if (!wire_) return net::Message{0, "", core_.serve_view(op, tensor_, begin, length, released)};
    Tensor packed = Tensor::empty(DType::i32, Shape{packed_elements(length)}, core_.pool());
    auto* out = static_cast<std::uint16_t*>(packed.raw_data());
    pack16(*wire_, tensor_.data<float>() + begin, out, length);  // exact: the tensor was rounded first
    if (length % 2 != 0) out[length] = 0;
    return net::Message{0, "", core_.serve_made(op, packed, released)};
  }

  // Peers that have fetched segment j (and the transport has let go of it); under mu().
  std::uint64_t released(std::int64_t j) const { return released_[static_cast<std::size_t>(j)]; }

 private:
  GroupCore& core_;
  Tensor tensor_;
  SegmentPlan plan_;
  std::optional<Wire16> wire_;
  std::vector<std::uint64_t> released_;
};

}  // namespace

void direct_allreduce(Group& group, const Tensor& tensor, const AllreduceOptions& options) {
  const auto wire = wire_format(options.compression);
  const int rank = group.rank(), size = group.size();
  const std::size_t elem = wire ? 2 : dtype_size(tensor.dtype());
  SegmentPlan plan({tensor.numel()}, static_cast<std::int64_t>(group.options().segment_bytes / elem));
  const std::int64_t S = plan.segments();
  const auto depth = std::min<std::int64_t>(static_cast<std::int64_t>(group.options().pipeline_depth), S);
  // Peers see this rank's values rounded to the wire format: use exactly those here too.
  if (wire) round_through16(*wire, tensor.data<float>(), tensor.numel());
  const std::size_t slot_bytes = wire ? 4 * static_cast<std::size_t>(packed_elements(plan.max_segment_length()))
                                      : static_cast<std::size_t>(plan.max_segment_length()) * elem;
  // Slots [peer][depth], plus one for this rank's own segment when the sum needs it apart.
  Tensor scratch = Tensor::empty(
      DType::i32, Shape{static_cast<std::int64_t>((slot_bytes * static_cast<std::size_t>(size * depth + 1) + 3) / 4)},
      group.core().pool());
  auto slot = [&](int p, std::int64_t j) { return static_cast<std::size_t>(p * depth + j % depth) * slot_bytes; };
  const std::size_t own_slot = static_cast<std::size_t>(size * depth) * slot_bytes;
  auto* base = static_cast<std::byte*>(scratch.raw_data());

  auto server = std::make_shared<DirectServer>(group.core(), tensor, plan, wire);
  ActiveOp op(group, allreduce_spec(tensor, options, Algorithm::direct), server, options.timeout);
  op.run([&] {
    std::vector<std::future<net::Message>> replies(static_cast<std::size_t>(size * depth));
    auto post = [&](int p, std::int64_t j) {
      const std::int64_t length = plan.segment_length(0, j);
      const std::size_t bytes = wire ? 4 * static_cast<std::size_t>(packed_elements(length))
                                     : static_cast<std::size_t>(length) * elem;
      replies[static_cast<std::size_t>(p * depth + j % depth)] = op.ask(
          p, op.request(0, static_cast<std::uint32_t>(j)), byte_view(scratch, slot(p, j), bytes, wire ? DType::i32 : tensor.dtype()));
    };
    for (int p = 0; p < size; ++p) {
      for (std::int64_t j = 0; p != rank && j < depth; ++j) post(p, j);
    }
    for (std::int64_t j = 0; j < S; ++j) {
      for (int p = 0; p < size; ++p) {
        if (p != rank) op.await(replies[static_cast<std::size_t>(p * depth + j % depth)], p);
      }
      {
        std::unique_lock lock(op.core().mu());
        op.core().wait(lock, op.deadline(), [&] { return server->released(j) >= static_cast<std::uint64_t>(size - 1); },
                       [&] { return fmt::format("peers to fetch segment {} of rank {}", j, rank); });
      }
      const std::int64_t begin = plan.segment_begin(0, j), length = plan.segment_length(0, j);
      std::byte* mine = static_cast<std::byte*>(tensor.raw_data()) + begin * dtype_size(tensor.dtype());
      // x_p's values for this segment: a received slot, or this rank's own (kept apart).
      auto part = [&](int p) -> const std::byte* { return p == rank ? base + own_slot : base + slot(p, j); };
      if (wire) {
        auto* acc = reinterpret_cast<float*>(mine);
        pack16(*wire, acc, reinterpret_cast<std::uint16_t*>(base + own_slot), length);
        unpack16(*wire, reinterpret_cast<const std::uint16_t*>(part(0)), acc, length);
        for (int p = 1; p < size; ++p) add16_into(*wire, acc, reinterpret_cast<const std::uint16_t*>(part(p)), length);
      } else if (rank <= 1) {
        // x1 + x0 is x0 + x1 bit for bit, so ranks 0 and 1 sum in place.
        if (size > 1) add_into(tensor.dtype(), mine, part(1 - rank), length);
        for (int p = 2; p < size; ++p) add_into(tensor.dtype(), mine, part(p), length);
      } else {
        std::memcpy(base + own_slot, mine, static_cast<std::size_t>(length) * elem);
        std::memcpy(mine, part(0), static_cast<std::size_t>(length) * elem);
        for (int p = 1; p < size; ++p) add_into(tensor.dtype(), mine, part(p), length);
      }
      if (options.average) scale(tensor.data<float>() + begin, length, 1.0f / static_cast<float>(size));
      for (int p = 0; p < size; ++p) {
        if (p != rank && j + depth < S) post(p, j + depth);
      }
    }
    op.wait_served(static_cast<std::uint64_t>((size - 1) * S));
  });
}

}  // namespace trib::collectives::detail
