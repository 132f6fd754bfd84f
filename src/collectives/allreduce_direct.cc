// Direct allreduce: every rank fetches every other rank's whole tensor at once (one step,
// N-1 requests in flight) and sums all N in rank order, x0 + x1 + ... + x(N-1), so that
// every rank forms the same sum bit for bit. Latency-optimal for small tensors; each rank
// sends (N-1) times its tensor, so the ring takes over above GroupOptions::small_bytes.
//
// The reply to a peer is a view of the caller's tensor, so the sum is written only after
// every peer has fetched it (wait_served), never while the transport may still read it.
#include <fmt/format.h>

#include <cstring>

#include "collectives/active_op.h"
#include "collectives/allreduce_internal.h"
#include "collectives/tensor_view.h"

namespace trib::collectives::detail {
namespace {

class DirectServer final : public OpServer {
 public:
  DirectServer(GroupCore& core, Tensor tensor, std::optional<Wire16> wire)
      : core_(core), tensor_(std::move(tensor)), wire_(wire) {}

  net::Message serve(const Request&, const std::shared_ptr<OpState>& op) override {
    const std::int64_t n = tensor_.numel();
    if (!wire_) return net::Message{0, "", core_.serve_view(op, tensor_, 0, n)};
    Tensor packed = Tensor::empty(DType::i32, Shape{packed_elements(n)}, core_.pool());
    auto* out = static_cast<std::uint16_t*>(packed.raw_data());
    pack16(*wire_, tensor_.data<float>(), out, n);  // exact: the tensor was rounded first
    if (n % 2 != 0) out[n] = 0;
    return net::Message{0, "", core_.serve_made(op, packed)};
  }

 private:
  GroupCore& core_;
  Tensor tensor_;
  std::optional<Wire16> wire_;
};

}  // namespace

void direct_allreduce(Group& group, const Tensor& tensor, const AllreduceOptions& options) {
  const auto wire = wire_format(options.compression);
  const int rank = group.rank(), size = group.size();
  const std::int64_t n = tensor.numel();
  // Peers see this rank's values rounded to the wire format: use exactly those here too.
  if (wire) round_through16(*wire, tensor.data<float>(), n);
  const std::size_t reply_bytes = wire ? 4 * static_cast<std::size_t>(packed_elements(n)) : tensor.nbytes();
  const DType reply_dtype = wire ? DType::i32 : tensor.dtype();
  Tensor scratch = Tensor::empty(DType::i32, Shape{static_cast<std::int64_t>((reply_bytes * size + 3) / 4)},
                                 group.core().pool());
  auto* scratch_base = static_cast<std::byte*>(scratch.raw_data());

  auto server = std::make_shared<DirectServer>(group.core(), tensor, wire);
  ActiveOp op(group, allreduce_spec(tensor, options, Algorithm::direct), server, options.timeout);
  op.run([&] {
    std::vector<std::future<net::Message>> replies(static_cast<std::size_t>(size));
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      replies[static_cast<std::size_t>(p)] =
          op.ask(p, op.request(0, 0), byte_view(scratch, static_cast<std::size_t>(p) * reply_bytes, reply_bytes, reply_dtype));
    }
    for (int p = 0; p < size; ++p) {
      if (p != rank) op.await(replies[static_cast<std::size_t>(p)], p);
    }
    op.wait_served(static_cast<std::uint64_t>(size - 1));

    // The sum, in rank order. Slot `rank` of the scratch holds this rank's own values.
    const std::size_t elem = dtype_size(tensor.dtype());
    std::byte* own = scratch_base + static_cast<std::size_t>(rank) * reply_bytes;
    if (wire) {
      pack16(*wire, tensor.data<float>(), reinterpret_cast<std::uint16_t*>(own), n);
    } else if (n > 0) {
      std::memcpy(own, tensor.raw_data(), tensor.nbytes());
    }
    auto contribution = [&](int p) { return scratch_base + static_cast<std::size_t>(p) * reply_bytes; };
    if (wire) {
      unpack16(*wire, reinterpret_cast<const std::uint16_t*>(contribution(0)), tensor.data<float>(), n);
      for (int p = 1; p < size; ++p) {
        add16_into(*wire, tensor.data<float>(), reinterpret_cast<const std::uint16_t*>(contribution(p)), n);
      }
      if (options.average) scale(tensor.data<float>(), n, 1.0f / static_cast<float>(size));
    } else {
      if (n > 0) std::memcpy(tensor.raw_data(), contribution(0), n * elem);
      for (int p = 1; p < size; ++p) add_into(tensor.dtype(), tensor.raw_data(), contribution(p), n);
      if (options.average) scale(tensor.data<float>(), n, 1.0f / static_cast<float>(size));
    }
  });
}

}  // namespace trib::collectives::detail
