// Ring allgather, pulled and pipelined like the ring allreduce's second half: in step s
// (0..N-2) rank r receives block r-s-1 from its left neighbour, in segments, straight into
// the output, and serves block r-s to its right neighbour (its own block at step 0, else
// the block it received at step s-1). With ranks of different row counts, one direct
// exchange of the counts comes first, so that every rank can size the output.
#include <fmt/format.h>

#include <cstring>

#include "collectives/active_op.h"
#include "collectives/segment_plan.h"
#include "collectives/tensor_view.h"
#include "trib/collectives/allgather.h"

namespace trib::collectives {
namespace {

using namespace detail;

OpSpec allgather_spec(const Tensor& rows, bool same_shape, Algorithm algorithm) {
  OpSpec s;
  s.family = Family::allgather;
  s.algorithm = algorithm;
  s.dtype = rows.dtype();
  s.shape = rows.shape();
  s.has_tensor = true;
  s.rows_may_differ = !same_shape;
  s.param = same_shape ? 1 : 0;
  s.describe_param = [](std::uint32_t p) { return p ? "equal shapes" : "per-rank row counts"; };
  return s;
}

// Replies with this rank's row count.
class SizesServer final : public OpServer {
 public:
  SizesServer(GroupCore& core, std::int64_t rows) : core_(core), rows_(rows) {}
  net::Message serve(const Request&, const std::shared_ptr<OpState>& op) override {
    return net::Message{0, "", core_.serve_made(op, Tensor::from_vector<std::int64_t>(Shape{1}, {rows_}))};
  }

 private:
  GroupCore& core_;
  std::int64_t rows_;
};

std::vector<std::int64_t> exchange_row_counts(Group& group, const Tensor& rows, const AllgatherOptions& options) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(group.size()), rows.shape()[0]);
  auto server = std::make_shared<SizesServer>(group.core(), rows.shape()[0]);
  ActiveOp op(group, allgather_spec(rows, false, Algorithm::sizes), server, options.timeout);
  op.run([&] {
    std::vector<std::future<net::Message>> replies(counts.size());
    for (int p = 0; p < group.size(); ++p) {
      if (p != group.rank()) replies[static_cast<std::size_t>(p)] = op.ask(p, op.request(0, 0));
    }
    for (int p = 0; p < group.size(); ++p) {
      if (p == group.rank()) continue;
      net::Message m = op.await(replies[static_cast<std::size_t>(p)], p);
      TRIB_CHECK(m.tensor.defined() && m.tensor.dtype() == DType::i64 && m.tensor.numel() == 1, Error,
                 "rank {} sent a malformed row count", p);
      counts[static_cast<std::size_t>(p)] = *m.tensor.data<std::int64_t>();
      TRIB_CHECK(counts[static_cast<std::size_t>(p)] >= 0, Error, "rank {} sent a negative row count", p);
    }
    op.wait_served(static_cast<std::uint64_t>(group.size() - 1));
  });
  return counts;
}

class AllgatherServer final : public OpServer {
 public:
  AllgatherServer(GroupCore& core, Tensor output, SegmentPlan plan)
      : core_(core), output_(std::move(output)), plan_(std::move(plan)) {}

  net::Message serve(const Request& r, const std::shared_ptr<OpState>& op) override {
    const int size = core_.size(), rank = core_.rank();
    const std::int64_t S = plan_.segments();
    TRIB_CHECK(r.from == mod(rank + 1, size) && r.step + 1 < static_cast<std::uint32_t>(size) && r.segment < S,
               Error, "rank {} asked rank {} for allgather piece ({}, {}) out of turn", r.from, rank, r.step,
               r.segment);
    if (r.step > 0) {
      const std::uint64_t needed = (r.step - 1) * S + r.segment + 1;
      std::unique_lock lock(core_.mu());
      core_.wait(lock, op->deadline, [&] { return op->progress >= needed; },
                 [&] { return fmt::format("rank {} to receive allgather piece ({}, {})", rank, r.step - 1, r.segment); });
    }
    const int block = mod(rank - static_cast<int>(r.step), size);
    return net::Message{0, "", core_.serve_view(op, output_, plan_.segment_begin(block, r.segment),
                                                plan_.segment_length(block, r.segment))};
  }

 private:
  GroupCore& core_;
  Tensor output_;
  SegmentPlan plan_;
};

}  // namespace

Tensor allgather(Group& group, const Tensor& input, const AllgatherOptions& options) {
  TRIB_CHECK(input.defined(), InvalidArgument, "allgather: the tensor is undefined");
  const Tensor rows = input.shape().rank() == 0 ? input.reshape(Shape{1}) : input;
  const int size = group.size(), rank = group.rank();
  std::vector<std::int64_t> counts(static_cast<std::size_t>(size), rows.shape()[0]);
  if (!options.same_shape && size > 1) counts = exchange_row_counts(group, rows, options);

  std::int64_t row_elements = 1;
  for (int i = 1; i < rows.shape().rank(); ++i) row_elements *= rows.shape()[i];
  std::vector<std::int64_t> out_dims = rows.shape().dims();
  out_dims[0] = 0;
  std::vector<std::int64_t> block_elements;
  for (std::int64_t c : counts) {
    out_dims[0] += c;
    block_elements.push_back(c * row_elements);
  }
  Tensor output = Tensor::empty(rows.dtype(), Shape(out_dims));
  const auto segment_elements = static_cast<std::int64_t>(group.options().segment_bytes / dtype_size(rows.dtype()));
  SegmentPlan plan(block_elements, segment_elements);
  if (rows.nbytes() > 0) {
    std::memcpy(static_cast<std::byte*>(output.raw_data()) + plan.block_begin(rank) * dtype_size(rows.dtype()),
                rows.raw_data(), rows.nbytes());
  }
  if (size == 1) return output;

  const std::int64_t S = plan.segments();
  const std::int64_t total = static_cast<std::int64_t>(size - 1) * S;
  const int left = mod(rank - 1, size);
  auto server = std::make_shared<AllgatherServer>(group.core(), output, plan);
  ActiveOp op(group, allgather_spec(rows, options.same_shape, Algorithm::ring), server, options.timeout);
  op.run([&] {
    const auto depth = static_cast<std::int64_t>(group.options().pipeline_depth);
    std::vector<std::future<net::Message>> replies(static_cast<std::size_t>(depth));
    auto post = [&](std::int64_t item) {
      const std::int64_t step = item / S, j = item % S;
      const int block = mod(rank - static_cast<int>(step) - 1, size);
      replies[static_cast<std::size_t>(item % depth)] =
          op.ask(left, op.request(static_cast<std::uint32_t>(step), static_cast<std::uint32_t>(j)),
                 flat_view(output, plan.segment_begin(block, j), plan.segment_length(block, j)));
    };
    for (std::int64_t item = 0; item < std::min(depth, total); ++item) post(item);
    for (std::int64_t item = 0; item < total; ++item) {
      op.await(replies[static_cast<std::size_t>(item % depth)], left);
      op.advance();
      if (item + depth < total) post(item + depth);
    }
    op.wait_served(static_cast<std::uint64_t>(total));
  });
  return output;
}

}  // namespace trib::collectives
