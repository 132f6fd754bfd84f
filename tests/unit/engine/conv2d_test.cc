#include <gtest/gtest.h>

#include "engine/ops/nn_backward.h"
#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

struct ConvCase {
  Shape x, w;
  ops::Conv2dOptions opts;
};

Shape output_shape(const ConvCase& c) {
  auto out = [](std::int64_t in, std::int64_t k, int s, int p) { return (in + 2 * p - k) / s + 1; };
  return Shape{c.x[0], c.w[0], out(c.x[2], c.w[2], c.opts.stride_h, c.opts.pad_h),
               out(c.x[3], c.w[3], c.opts.stride_w, c.opts.pad_w)};
}

// Odd sizes, strides 2, paddings 1 and 2, batch 1, non-square kernels, and channel counts
// that are multiples of 16 (where oneDNN picks blocked layouts, exercising the reorders).
std::vector<ConvCase> cases() {
  return {
      {Shape{2, 3, 7, 9}, Shape{4, 3, 3, 3}, {1, 1, 1, 1}},
      {Shape{1, 2, 7, 9}, Shape{5, 2, 3, 3}, {2, 2, 1, 1}},
      {Shape{2, 1, 8, 8}, Shape{3, 1, 5, 5}, {1, 1, 2, 2}},
      {Shape{1, 3, 9, 7}, Shape{2, 3, 2, 3}, {2, 1, 0, 2}},
      {Shape{2, 16, 5, 6}, Shape{32, 16, 3, 3}, {1, 1, 1, 1}},
      {Shape{1, 32, 7, 7}, Shape{16, 32, 5, 5}, {2, 2, 2, 2}},
  };
}

std::string describe(const ConvCase& c) {
  return fmt::format("x {} w {} stride {}x{} pad {}x{}", c.x.to_string(), c.w.to_string(),
                     c.opts.stride_h, c.opts.stride_w, c.opts.pad_h, c.opts.pad_w);
}

TEST(Conv2d, MatchesReferenceAndGradient) {
  Rng rng(21);
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    std::vector<Tensor> in{random_tensor(c.x, rng), random_tensor(c.w, rng)};
    auto build = [&c](Graph& g, std::span<const Value> v) { return ops::conv2d(g, v[0], v[1], c.opts); };
    testing::expect_fast_matches_reference(build, in);
    testing::expect_fast_matches_reference(build, in, 1e-4f, /*training=*/false);
    testing::expect_gradients_match_numeric(build, in, {0, 1});
  }
}

TEST(Conv2d, BackwardDataMatchesReference) {
  Rng rng(22);
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    std::vector<Tensor> in{random_tensor(output_shape(c), rng), random_tensor(c.w, rng)};
    testing::expect_fast_matches_reference(
        [&c](Graph& g, std::span<const Value> v) {
          return ops::backward::conv2d_data(g, v[0], v[1], c.x, c.opts);
        },
        in);
  }
}

TEST(Conv2d, BackwardWeightsMatchesReference) {
  Rng rng(23);
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    std::vector<Tensor> in{random_tensor(c.x, rng), random_tensor(output_shape(c), rng)};
    testing::expect_fast_matches_reference(
        [&c](Graph& g, std::span<const Value> v) {
          return ops::backward::conv2d_weights(g, v[0], v[1], c.w, c.opts);
        },
        in);
  }
}

TEST(Conv2d, MismatchedChannelsNamesBothNodes) {
  Graph g;
  Value x = g.placeholder("images", {DType::f32, Shape{2, 3, 8, 8}});
  Value w = g.placeholder("kernel", {DType::f32, Shape{4, 5, 3, 3}});
  try {
    ops::conv2d(g, x, w, {}, "conv1");
    ADD_FAILURE() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    for (const char* part : {"'conv1'", "'images'", "'kernel'", "3 channels", "5 input channels"})
      EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  }
}

TEST(Conv2d, RejectsKernelLargerThanPaddedImage) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{1, 1, 4, 4}});
  Value w = g.placeholder("w", {DType::f32, Shape{1, 1, 7, 7}});
  EXPECT_THROW(ops::conv2d(g, x, w, {1, 1, 1, 1}), ShapeError);
  EXPECT_THROW(ops::conv2d(g, x, g.placeholder("w3", {DType::f32, Shape{1, 1, 3, 3}}), {0, 1, 0, 0}),
               ShapeError);
}

}  // namespace
}  // namespace trib
