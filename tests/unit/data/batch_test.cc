#include "trib/data/batch.h"

#include <gtest/gtest.h>

#include "trib/core/error.h"

namespace trib::data {
namespace {

Batch three_rows() {
  return Batch(Tensor::from_vector<float>(Shape{3, 2}, {0, 1, 2, 3, 4, 5}),
               Tensor::from_vector<std::int32_t>(Shape{3}, {7, 8, 9}));
}

TEST(BatchTest, NamedFieldsShareRows) {
  Batch b = three_rows();
  EXPECT_EQ(b.rows(), 3);
  EXPECT_EQ(b.features().shape(), (Shape{3, 2}));
  EXPECT_EQ(b.labels().dtype(), DType::i32);
  b.set("weight", Tensor::full(Shape{3}, 0.5f));
  EXPECT_TRUE(b.has("weight"));
  EXPECT_EQ(b.fields().back().first, "weight");
  EXPECT_THROW(b.set("mask", Tensor::full(Shape{4}, 1.0f)), ShapeError);
  EXPECT_THROW(b.set("weight", Tensor::full(Shape{4}, 1.0f)), ShapeError);  // replacing, too
  Batch single;
  single.set("x", Tensor::full(Shape{2}, 1.0f));
  single.set("x", Tensor::full(Shape{5}, 1.0f));  // the only field may change its rows
  EXPECT_EQ(single.rows(), 5);
}

TEST(BatchTest, MissingFieldNamesWhatIsThere) {
  try {
    three_rows().get("weights");
    FAIL() << "expected NotFound";
  } catch (const NotFound& e) {
    EXPECT_STREQ(e.what(), "batch has no field 'weights' (fields: features, labels)");
  }
}

TEST(BatchTest, SliceGatherAndConcatCopyRows) {
  Batch b = three_rows();
  Batch tail = slice_rows(b, 1, 3);
  EXPECT_EQ(tail.features().to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  std::vector<std::int64_t> order = {2, 0};
  Batch picked = gather_rows(b, order);
  EXPECT_EQ(picked.labels().to_vector<std::int32_t>(), (std::vector<std::int32_t>{9, 7}));
  EXPECT_FALSE(picked.features().shares_storage(b.features()));

  std::vector<Batch> parts = {tail, picked};
  Batch joined = concat_rows(parts);
  EXPECT_EQ(joined.rows(), 4);
  EXPECT_EQ(joined.labels().to_vector<std::int32_t>(), (std::vector<std::int32_t>{8, 9, 9, 7}));
}

TEST(BatchTest, ConcatRejectsMismatchedRowShapes) {
  Batch a = three_rows();
  Batch b(Tensor::full(Shape{1, 3}, 0.0f), Tensor::zeros(DType::i32, Shape{1}));
  std::vector<Batch> parts = {a, b};
  EXPECT_THROW(concat_rows(parts), ShapeError);
}

}  // namespace
}  // namespace trib::data
