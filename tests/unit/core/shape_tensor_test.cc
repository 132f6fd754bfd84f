#include <gtest/gtest.h>

#include "trib/core/tensor.h"

namespace trib {
namespace {

TEST(Shape, CountsElementsAndStrides) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s[-1], 4);
  EXPECT_EQ(s.strides(), (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_EQ(Shape{}.numel(), 1) << "a scalar";
  EXPECT_EQ((Shape{5, 0}.numel()), 0);
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
}

TEST(Shape, RejectsNegativeOverflowingAndTooManyDimensions) {
  EXPECT_THROW((Shape{2, -1}), InvalidArgument);
  EXPECT_THROW((Shape{1 << 30, 1 << 30}), InvalidArgument) << "2^60 elements";
  EXPECT_THROW((Shape{std::int64_t{1} << 62, 4}), InvalidArgument) << "the product would overflow int64";
  EXPECT_THROW(Shape(std::vector<std::int64_t>(9, 1)), InvalidArgument);
  EXPECT_THROW(Shape{2}.normalize_axis(1), InvalidArgument);
}

TEST(Tensor, StorageIsAlignedAndTyped) {
  Tensor t = Tensor::zeros(DType::f32, Shape{3, 5});
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  EXPECT_EQ(t.nbytes(), 60u);
  EXPECT_THROW(t.data<std::int32_t>(), InvalidArgument);
  for (float v : t.span<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Tensor, ReshapeIsAViewAndCloneIsACopy) {
  Tensor t = Tensor::from_vector<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor v = t.reshape(Shape{3, 2});
  EXPECT_TRUE(v.shares_storage(t));
  v.data<float>()[0] = 10;
  EXPECT_EQ(t.data<float>()[0], 10);
  Tensor c = t.clone();
  EXPECT_FALSE(c.shares_storage(t));
  c.data<float>()[1] = 20;
  EXPECT_EQ(t.data<float>()[1], 2);
  EXPECT_THROW(t.reshape(Shape{4}), ShapeError);
}

TEST(Tensor, ItemAndFill) {
  EXPECT_EQ(Tensor::scalar(2.5f).item(), 2.5);
  Tensor i = Tensor::empty(DType::i64, Shape{4});
  i.fill(7);
  EXPECT_EQ(i.to_vector<std::int64_t>(), (std::vector<std::int64_t>{7, 7, 7, 7}));
  EXPECT_THROW(i.item(), InvalidArgument);
  EXPECT_THROW(Tensor::from_vector<float>(Shape{3}, {1, 2}), InvalidArgument);
}

TEST(PoolAllocator, RecyclesBlocksAndTracksPeak) {
  auto pool = std::make_shared<PoolAllocator>();
  void* first;
  {
    Tensor a = Tensor::empty(DType::f32, Shape{1000}, pool.get());
    first = a.raw_data();
    EXPECT_GE(pool->bytes_in_use(), 4000u);
  }
  EXPECT_EQ(pool->bytes_in_use(), 0u);
  Tensor b = Tensor::empty(DType::f32, Shape{1000}, pool.get());
  EXPECT_EQ(b.raw_data(), first) << "the freed block is reused";
  EXPECT_GE(pool->peak_bytes(), 4000u);
}

TEST(PoolAllocator, TensorsMayOutliveTheirPool) {
  Tensor t;
  {
    auto pool = std::make_shared<PoolAllocator>();
    t = Tensor::full(Shape{16}, 3.0f, pool.get());
  }
  EXPECT_EQ(t.data<float>()[15], 3.0f);
}

}  // namespace
}  // namespace trib
