#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine/ops/nn_backward.h"
#include "op_test_util.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_tensor;

struct PoolCase {
  Shape x;
  ops::Pool2dOptions opts;
};

Shape output_shape(const PoolCase& c) {
  auto out = [](std::int64_t in, int k, int s, int p) { return (in + 2 * p - k) / s + 1; };
  return Shape{c.x[0], c.x[1], out(c.x[2], c.opts.kernel_h, c.opts.stride_h, c.opts.pad_h),
               out(c.x[3], c.opts.kernel_w, c.opts.stride_w, c.opts.pad_w)};
}

std::vector<PoolCase> cases() {
  return {
      {Shape{1, 1, 4, 4}, {2, 2, 2, 2, 0, 0}},
      {Shape{2, 3, 7, 9}, {2, 2, 2, 2, 0, 0}},  // odd sizes: the last row and column dropped
      {Shape{2, 3, 7, 9}, {3, 3, 2, 2, 1, 1}},
      {Shape{1, 2, 8, 7}, {3, 3, 1, 1, 2, 2}},
      {Shape{1, 16, 6, 5}, {3, 2, 2, 1, 1, 0}},
  };
}

std::string describe(const PoolCase& c) {
  return fmt::format("x {} kernel {}x{} stride {}x{} pad {}x{}", c.x.to_string(), c.opts.kernel_h,
                     c.opts.kernel_w, c.opts.stride_h, c.opts.stride_w, c.opts.pad_h, c.opts.pad_w);
}

// Distinct values 0.05 apart in random order: a finite-difference step of 0.01 never changes
// which cell is a window's maximum.
Tensor distinct_values(const Shape& s, Rng& rng) {
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.05f * static_cast<float>(i) - 1.0f;
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
  return Tensor::from_vector(s, v);
}

class PoolTest : public ::testing::TestWithParam<bool> {};  // param: max

Value build_forward(Graph& g, bool max, Value x, ops::Pool2dOptions opts) {
  return max ? ops::max_pool2d(g, x, opts) : ops::avg_pool2d(g, x, opts);
}

TEST_P(PoolTest, MatchesReferenceAndGradient) {
  const bool max = GetParam();
  Rng rng(31);
  for (const PoolCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    std::vector<Tensor> in{distinct_values(c.x, rng)};
    auto build = [&](Graph& g, std::span<const Value> v) { return build_forward(g, max, v[0], c.opts); };
    testing::expect_fast_matches_reference(build, in);
    testing::expect_fast_matches_reference(build, in, 1e-4f, /*training=*/false);
    testing::expect_gradients_match_numeric(build, in, {0});
  }
}

TEST_P(PoolTest, BackwardMatchesReference) {
  const bool max = GetParam();
  Rng rng(32);
  for (const PoolCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    std::vector<Tensor> in{distinct_values(c.x, rng), random_tensor(output_shape(c), rng)};
    testing::expect_fast_matches_reference(
        [&](Graph& g, std::span<const Value> v) {
          if (!max) return ops::backward::avg_pool2d_data(g, v[1], c.x, c.opts);
          auto fwd = ops::backward::max_pool2d_with_workspace(g, v[0], c.opts);
          return ops::backward::max_pool2d_data(g, v[1], fwd[1], c.x, c.opts);
        },
        in);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, PoolTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "max" : "avg"; });

TEST(AvgPool2d, ExcludesPaddingFromTheAverage) {
  // 2x2 image of ones, 3x3 windows with padding 1: every window averages only real cells.
  Tensor x = Tensor::full(Shape{1, 1, 2, 2}, 1.0f);
  for (bool reference : {false, true}) {
    Tensor y = testing::run_op(
        [](Graph& g, std::span<const Value> v) { return ops::avg_pool2d(g, v[0], {3, 3, 1, 1, 1, 1}); },
        {x}, true, reference);
    ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
    for (float v : y.span<float>()) EXPECT_FLOAT_EQ(v, 1.0f);
  }
}

TEST(MaxPool2d, GradientNeedsATrainingRun) {
  Rng rng(33);
  PoolCase c{Shape{1, 2, 4, 4}, {}};
  std::vector<Tensor> in{distinct_values(c.x, rng), random_tensor(output_shape(c), rng)};
  auto build = [&](Graph& g, std::span<const Value> v) {
    auto fwd = ops::backward::max_pool2d_with_workspace(g, v[0], c.opts);
    return ops::backward::max_pool2d_data(g, v[1], fwd[1], c.x, c.opts);
  };
  EXPECT_THROW(testing::run_op(build, in, /*training=*/false), InvalidArgument);
}

TEST(Pool2d, RejectsPaddingAsLargeAsTheKernel) {
  Graph g;
  Value x = g.placeholder("x", {DType::f32, Shape{1, 1, 6, 6}});
  EXPECT_THROW(ops::max_pool2d(g, x, {2, 2, 2, 2, 2, 2}), ShapeError);
  EXPECT_THROW(ops::avg_pool2d(g, g.placeholder("flat", {DType::f32, Shape{4, 6}})), ShapeError);
}

}  // namespace
}  // namespace trib
