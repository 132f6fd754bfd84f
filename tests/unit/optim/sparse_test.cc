#include <gtest/gtest.h>

#include "trib/optim/adam.h"
#include "trib/optim/momentum.h"
#include "trib/optim/sgd.h"

namespace trib {
namespace {

// A [4, 2] embedding table with distinct values, so any stray write shows.
Tensor table() { return Tensor::from_vector(Shape{4, 2}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}); }

TEST(SparseUpdate, TouchesOnlyTheGivenRowsAndSumsDuplicates) {
  SlotStore slots;
  Tensor p = table();
  Tensor rows = Tensor::from_vector(Shape{3, 2}, std::vector<float>{1, 1, 2, 2, 3, 3});
  Tensor ids = Tensor::from_vector(Shape{3}, std::vector<std::int64_t>{2, 0, 2});
  Sgd().apply_sparse("emb", p, rows, ids, slots, 0.5f);
  // Row 2 gets the sum 1 + 3 = 4 per element: 5 - 2 = 3, 6 - 2 = 4. Row 0: 1 - 1, 2 - 1.
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0, 1, 3, 4, 3, 4, 7, 8}));
}

TEST(SparseUpdate, AcceptsI32Indices) {
  SlotStore slots;
  Tensor p = table();
  Tensor rows = Tensor::from_vector(Shape{1, 2}, std::vector<float>{2, 4});
  Tensor ids = Tensor::from_vector(Shape{1}, std::vector<std::int32_t>{3});
  Sgd().apply_sparse("emb", p, rows, ids, slots, 0.5f);
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 6, 6}));
}

TEST(SparseUpdate, LazyAdamMatchesDenseAdamOnTheSummedRow) {
  // Duplicates must be summed before the nonlinear update: two rows [1, -1] and [0.5, 0.5]
  // for id 1 equal one dense step with gradient [1.5, -0.5] on that row alone.
  SlotStore sparse_slots, dense_slots;
  Adam adam;
  Tensor p = table();
  Tensor rows = Tensor::from_vector(Shape{2, 2}, std::vector<float>{1, -1, 0.5f, 0.5f});
  Tensor ids = Tensor::from_vector(Shape{2}, std::vector<std::int64_t>{1, 1});
  Tensor row = Tensor::from_vector(Shape{1, 2}, std::vector<float>{3, 4});
  for (int step = 0; step < 2; ++step) {
    adam.apply_sparse("emb", p, rows, ids, sparse_slots, 0.1f);
    adam.apply("row", row, Tensor::from_vector(Shape{1, 2}, std::vector<float>{1.5f, -0.5f}), dense_slots, 0.1f);
  }
  std::vector<float> got = p.to_vector<float>();
  EXPECT_FLOAT_EQ(got[2], row.data<float>()[0]);
  EXPECT_FLOAT_EQ(got[3], row.data<float>()[1]);
  // Untouched rows keep their values, and their moments stay zero (lazy: no decay).
  EXPECT_EQ((std::vector<float>{got[0], got[1], got[4], got[5], got[6], got[7]}),
            (std::vector<float>{1, 2, 5, 6, 7, 8}));
  std::vector<float> m = sparse_slots.get("emb", "m").to_vector<float>();
  EXPECT_EQ((std::vector<float>{m[0], m[1], m[4], m[5], m[6], m[7]}), (std::vector<float>(6, 0.0f)));
  EXPECT_EQ(sparse_slots.get("emb", "step").item(), 2);
}

TEST(SparseUpdate, MomentumOfUntouchedRowsDoesNotDecay) {
  SlotStore slots;
  Momentum opt(MomentumOptions{.momentum = 0.9f});
  Tensor p = table();
  auto ids = [](std::int64_t id) { return Tensor::from_vector(Shape{1}, std::vector<std::int64_t>{id}); };
  Tensor one = Tensor::from_vector(Shape{1, 2}, std::vector<float>{1, 1});
  opt.apply_sparse("emb", p, one, ids(0), slots, 0.1f);
  opt.apply_sparse("emb", p, one, ids(3), slots, 0.1f);
  std::vector<float> buf = slots.get("emb", "momentum").to_vector<float>();
  EXPECT_EQ(buf, (std::vector<float>{1, 1, 0, 0, 0, 0, 1, 1}));
}

TEST(SparseUpdate, ReusesItsScratchAfterTheFirstStep) {
  SlotStore slots;
  Adam adam;
  Tensor p = table();
  Tensor rows = Tensor::from_vector(Shape{3, 2}, std::vector<float>{1, 1, 2, 2, 3, 3});
  Tensor ids = Tensor::from_vector(Shape{3}, std::vector<std::int64_t>{0, 1, 2});
  adam.apply_sparse("emb", p, rows, ids, slots, 0.1f);
  const float* summed = slots.scratch("emb").summed.data();
  const std::int64_t* order = slots.scratch("emb").order.data();
  Tensor fewer = Tensor::from_vector(Shape{2}, std::vector<std::int64_t>{3, 3});
  adam.apply_sparse("emb", p, Tensor::from_vector(Shape{2, 2}, std::vector<float>{1, 1, 1, 1}), fewer, slots, 0.1f);
  EXPECT_EQ(slots.scratch("emb").summed.data(), summed);
  EXPECT_EQ(slots.scratch("emb").order.data(), order);
}

TEST(SparseUpdate, RejectsOutOfRangeIndicesNamingTheVariable) {
  SlotStore slots;
  Tensor p = table();
  Tensor rows = Tensor::from_vector(Shape{1, 2}, std::vector<float>{1, 1});
  try {
    Sgd().apply_sparse("emb", p, rows, Tensor::from_vector(Shape{1}, std::vector<std::int64_t>{4}), slots, 0.1f);
    FAIL() << "index 4 of 4 rows accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'emb'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("index 4"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.to_vector<float>(), table().to_vector<float>());
}

TEST(SparseUpdate, RejectsRowsOfTheWrongWidth) {
  SlotStore slots;
  Tensor p = table();
  Tensor rows = Tensor::from_vector(Shape{1, 3}, std::vector<float>{1, 1, 1});
  EXPECT_THROW(Sgd().apply_sparse("emb", p, rows, Tensor::from_vector(Shape{1}, std::vector<std::int64_t>{0}),
                                  slots, 0.1f),
               InvalidArgument);
}

TEST(DenseUpdate, RejectsAGradientOfAnotherShape) {
  SlotStore slots;
  Tensor p = table();
  EXPECT_THROW(Sgd().apply("emb", p, Tensor::zeros(DType::f32, Shape{8}), slots, 0.1f), InvalidArgument);
}

}  // namespace
}  // namespace trib
