#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/nn_backward.h"
#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_ints;
using testing::random_tensor;

Value build_loss(Graph& g, std::span<const Value> x) {
  return ops::softmax_cross_entropy(g, x[0], x[1]);
}

TEST(SoftmaxCrossEntropy, MatchesReferenceAndGradient) {
  Rng rng(11);
  for (DType label_type : {DType::i32, DType::i64}) {
    for (Shape s : {Shape{1, 1}, Shape{1, 10}, Shape{7, 13}, Shape{64, 10}}) {
      SCOPED_TRACE(s.to_string() + " labels " + std::string(dtype_name(label_type)));
      std::vector<Tensor> in{random_tensor(s, rng, -4, 4),
                             random_ints(Shape{s[0]}, rng, s[1], label_type)};
      testing::expect_fast_matches_reference(build_loss, in);
      testing::expect_gradients_match_numeric(build_loss, in, {0});
    }
  }
}

TEST(SoftmaxCrossEntropy, BackwardMatchesReference) {
  Rng rng(12);
  for (Shape s : {Shape{1, 1}, Shape{7, 13}, Shape{33, 10}}) {
    SCOPED_TRACE(s.to_string());
    std::vector<Tensor> in{random_tensor(s, rng, -4, 4), random_ints(Shape{s[0]}, rng, s[1]),
                           Tensor::scalar(0.7f)};
    testing::expect_fast_matches_reference(
        [](Graph& g, std::span<const Value> x) {
          return ops::backward::softmax_cross_entropy(g, x[0], x[1], x[2]);
        },
        in);
  }
}

TEST(SoftmaxCrossEntropy, KnownValueAndStableForHugeLogits) {
  // Row 0: uniform over 4 classes, loss log 4. Row 1: the label's logit dominates by 2000.
  Tensor logits = Tensor::from_vector<float>(Shape{2, 4}, {0, 0, 0, 0, 1000, -1000, -1000, 3000});
  Tensor labels = Tensor::from_vector<std::int64_t>(Shape{2}, {2, 3});
  for (bool reference : {false, true}) {
    double loss = testing::run_op(build_loss, {logits, labels}, true, reference).item();
    EXPECT_NEAR(loss, std::log(4.0) / 2, 1e-6);
  }
}

TEST(SoftmaxCrossEntropy, LabelOutOfRangeNamesIt) {
  Rng rng(13);
  Tensor logits = random_tensor(Shape{4, 10}, rng);
  Tensor labels = Tensor::from_vector<std::int32_t>(Shape{4}, {1, 9, 10, 0});
  for (bool reference : {false, true}) {
    try {
      testing::run_op(build_loss, {logits, labels}, true, reference);
      ADD_FAILURE() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("label 10 at position 2"), std::string::npos) << msg;
      EXPECT_NE(msg.find("[0, 10)"), std::string::npos) << msg;
    }
  }
  Tensor negative = Tensor::from_vector<std::int64_t>(Shape{4}, {1, -1, 0, 0});
  EXPECT_THROW(testing::run_op(build_loss, {logits, negative}), InvalidArgument);
}

TEST(SoftmaxCrossEntropy, RejectsMismatchedShapes) {
  Graph g;
  Value logits = g.placeholder("logits", {DType::f32, Shape{8, 10}});
  Value labels = g.placeholder("labels", {DType::i32, Shape{7}});
  Value float_labels = g.placeholder("float_labels", {DType::f32, Shape{8}});
  EXPECT_THROW(ops::softmax_cross_entropy(g, logits, labels), ShapeError);
  EXPECT_THROW(ops::softmax_cross_entropy(g, logits, float_labels), ShapeError);
}

}  // namespace
}  // namespace trib
