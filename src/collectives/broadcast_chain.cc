// Pipelined chain broadcast: ranks in ring order from the root; each asks its predecessor
// for every segment (pipeline_depth requests ahead), receives it in place, and serves it to
// its successor as soon as it has it. Each rank receives the tensor once and sends it once:
// N-1 hops of latency for the first segment, then one segment per hop time.
#include <fmt/format.h>

#include "collectives/active_op.h"
#include "collectives/segment_plan.h"
#include "collectives/tensor_view.h"
#include "trib/collectives/broadcast.h"

namespace trib::collectives {
namespace {

using namespace detail;

class ChainServer final : public OpServer {
 public:
  ChainServer(GroupCore& core, Tensor tensor, SegmentPlan plan, bool root)
      : core_(core), tensor_(std::move(tensor)), plan_(std::move(plan)), root_(root) {}

  net::Message serve(const Request& r, const std::shared_ptr<OpState>& op) override {
    TRIB_CHECK(r.segment < plan_.segments(), Error, "rank {} asked for broadcast segment {} of {}",
               r.from, r.segment, plan_.segments());
    if (!root_) {
      std::unique_lock lock(core_.mu());
      core_.wait(lock, op->deadline, [&] { return op->progress > r.segment; },
                 [&] { return fmt::format("broadcast segment {} to reach rank {}", r.segment, core_.rank()); });
    }
    return net::Message{0, "", core_.serve_view(op, tensor_, plan_.segment_begin(0, r.segment),
                                                plan_.segment_length(0, r.segment))};
  }

 private:
  GroupCore& core_;
  Tensor tensor_;
  SegmentPlan plan_;
  bool root_;
};

}  // namespace

void broadcast(Group& group, const Tensor& tensor, const BroadcastOptions& options) {
  TRIB_CHECK(tensor.defined(), InvalidArgument, "broadcast: the tensor is undefined");
  const int size = group.size(), rank = group.rank(), root = options.root;
  TRIB_CHECK(root >= 0 && root < size, InvalidArgument, "broadcast: root {} is outside a group of {} ranks", root,
             size);
  if (size == 1) return;
  const auto segment_elements =
      static_cast<std::int64_t>(group.options().segment_bytes / dtype_size(tensor.dtype()));
  SegmentPlan plan({tensor.numel()}, segment_elements);
  const std::int64_t S = plan.segments();
  const int position = mod(rank - root, size);  // 0 for the root
  const int predecessor = mod(rank - 1, size);
  const bool has_successor = position < size - 1;

  OpSpec spec;
  spec.family = Family::broadcast;
  spec.algorithm = Algorithm::chain;
  spec.dtype = tensor.dtype();
  spec.shape = tensor.shape();
  spec.has_tensor = true;
  spec.param = static_cast<std::uint32_t>(root);
  spec.describe_param = [](std::uint32_t p) { return fmt::format("root {}", p); };
  auto server = std::make_shared<ChainServer>(group.core(), tensor, plan, position == 0);
  ActiveOp op(group, std::move(spec), server, options.timeout);
  op.run([&] {
    if (position > 0) {
      const auto depth = static_cast<std::int64_t>(group.options().pipeline_depth);
      std::vector<std::future<net::Message>> replies(static_cast<std::size_t>(depth));
      auto post = [&](std::int64_t j) {
        replies[static_cast<std::size_t>(j % depth)] = op.ask(
            predecessor, op.request(0, static_cast<std::uint32_t>(j)),
            flat_view(tensor, plan.segment_begin(0, j), plan.segment_length(0, j)));
      };
      for (std::int64_t j = 0; j < std::min(depth, S); ++j) post(j);
      for (std::int64_t j = 0; j < S; ++j) {
        op.await(replies[static_cast<std::size_t>(j % depth)], predecessor);
        op.advance();
        if (j + depth < S) post(j + depth);
      }
    }
    op.wait_served(has_successor ? static_cast<std::uint64_t>(S) : 0);
  });
}

}  // namespace trib::collectives
