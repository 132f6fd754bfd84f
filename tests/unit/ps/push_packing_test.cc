// A worker packs an embedding gradient as distinct rows with their ids, duplicates summed,
// so that no push holds more rows than the server's slice.
#include "ps/push_packing.h"

#include <gtest/gtest.h>

namespace trib::ps {
namespace {

struct Packing {
  std::vector<VariableInfo> vars{{"w", Shape{2}}, {"emb", Shape{5, 2}}};
  Placement placement = place(vars, 1, PlacementStrategy::greedy, 1 << 20);
  std::vector<Slice> slices = placement.slices_of(0);
  std::vector<std::size_t> gradient{0, 1};
  std::vector<update::GradTensor> grads;

  Packing() {
    grads.push_back({Tensor::from_vector(Shape{2}, std::vector<float>{1, 2}), Tensor()});
    // Rows for ids 3, 1, 3, 3: id 3 three times.
    grads.push_back({Tensor::from_vector(Shape{4, 2}, std::vector<float>{1, 1, 2, 2, 10, 10, 100, 100}),
                     Tensor::from_vector(Shape{4}, std::vector<std::int64_t>{3, 1, 3, 3})});
  }
};

TEST(PushPacking, DuplicateRowsAreSummedAndSentOnce) {
  Packing p;
  proto::Body body = proto::make_body(proto::Type::push);
  Tensor values = pack_gradients({&p.slices, &p.vars, &p.gradient, false, nullptr}, p.grads, body);
  ASSERT_EQ(body.sparse.size(), 1u);
  EXPECT_EQ(body.sparse[0].slice, 1u);
  EXPECT_EQ(body.sparse[0].rows, 2) << "ids 1 and 3, each once";
  ASSERT_EQ(body.ids.numel(), 2);
  EXPECT_EQ(body.ids.data<std::int64_t>()[0], 1);
  EXPECT_EQ(body.ids.data<std::int64_t>()[1], 3);
  std::vector<float> got(values.data<float>(), values.data<float>() + values.numel());
  EXPECT_EQ(got, (std::vector<float>{1, 2, 2, 2, 111, 111})) << "w, then row 1, then row 3 summed";
}

TEST(PushPacking, SyncDensifiesEmbeddingRows) {
  Packing p;
  proto::Body body = proto::make_body(proto::Type::push);
  Tensor values = pack_gradients({&p.slices, &p.vars, &p.gradient, true, nullptr}, p.grads, body);
  EXPECT_TRUE(body.sparse.empty());
  std::vector<float> got(values.data<float>(), values.data<float>() + values.numel());
  EXPECT_EQ(got, (std::vector<float>{1, 2, 0, 0, 2, 2, 0, 0, 111, 111, 0, 0}));
}

}  // namespace
}  // namespace trib::ps
