// Dissemination barrier: in round k (0..ceil(log2 N)-1) rank r asks rank r-2^k, which
// answers once it has itself entered round k. After round k, r knows that the 2^(k+1)
// ranks below it have all arrived; after the last round, that everyone has.
#include <fmt/format.h>

#include "collectives/active_op.h"
#include "collectives/segment_plan.h"
#include "trib/collectives/barrier.h"

namespace trib::collectives {
namespace {

using namespace detail;

class BarrierServer final : public OpServer {
 public:
  explicit BarrierServer(GroupCore& core) : core_(core) {}
  net::Message serve(const Request& r, const std::shared_ptr<OpState>& op) override {
    {
      std::unique_lock lock(core_.mu());
      core_.wait(lock, op->deadline, [&] { return op->progress >= r.step; },
                 [&] { return fmt::format("rank {} to reach barrier round {}", core_.rank(), r.step); });
    }
    return net::Message{0, "", core_.serve_made(op)};
  }

 private:
  GroupCore& core_;
};

}  // namespace

void barrier(Group& group, const BarrierOptions& options) {
  const int size = group.size(), rank = group.rank();
  if (size == 1) return;
  int rounds = 0;
  while ((1 << rounds) < size) ++rounds;
  OpSpec spec;
  spec.family = Family::barrier;
  spec.algorithm = Algorithm::dissemination;
  ActiveOp op(group, std::move(spec), std::make_shared<BarrierServer>(group.core()), options.timeout);
  op.run([&] {
    for (int k = 0; k < rounds; ++k) {
      const int from = mod(rank - (1 << k), size);
      auto reply = op.ask(from, op.request(static_cast<std::uint32_t>(k), 0));
      op.await(reply, from);
      op.advance();
    }
    op.wait_served(static_cast<std::uint64_t>(rounds));
  });
}

}  // namespace trib::collectives
