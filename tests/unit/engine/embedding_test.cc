#include <gtest/gtest.h>

#include "engine/ops/nn_backward.h"
#include "op_test_util.h"
#include "trib/engine/autodiff.h"
#include "trib/engine/executor.h"
#include "trib/engine/ops.h"

namespace trib {
namespace {

using testing::random_ints;
using testing::random_tensor;

Value build_embedding(Graph& g, std::span<const Value> v) { return ops::embedding(g, v[0], v[1]); }

TEST(Embedding, MatchesReference) {
  Rng rng(61);
  for (DType id_type : {DType::i32, DType::i64}) {
    for (Shape ids : {Shape{1}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4}}) {
      SCOPED_TRACE(ids.to_string() + " " + std::string(dtype_name(id_type)));
      std::vector<Tensor> in{random_tensor(Shape{11, 6}, rng), random_ints(ids, rng, 11, id_type)};
      testing::expect_fast_matches_reference(build_embedding, in);
      Tensor y = testing::run_op(build_embedding, in);
      std::vector<std::int64_t> dims = ids.dims();
      dims.push_back(6);
      EXPECT_EQ(y.shape(), Shape(dims));
    }
  }
}

TEST(Embedding, IndicesMatchReference) {
  Rng rng(62);
  for (DType id_type : {DType::i32, DType::i64})
    testing::expect_fast_matches_reference(
        [](Graph& g, std::span<const Value> v) { return ops::backward::embedding_indices(g, v[0]); },
        {random_ints(Shape{3, 5}, rng, 100, id_type)});
}

TEST(Embedding, IdOutOfRangeNamesIt) {
  Rng rng(63);
  Tensor table = random_tensor(Shape{5, 3}, rng);
  Tensor ids = Tensor::from_vector<std::int64_t>(Shape{2, 2}, {0, 4, 5, 1});
  for (bool reference : {false, true}) {
    try {
      testing::run_op(build_embedding, {table, ids}, true, reference);
      ADD_FAILURE() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("id 5 at position 2"), std::string::npos) << e.what();
    }
  }
  Tensor negative = Tensor::from_vector<std::int32_t>(Shape{2}, {-1, 0});
  EXPECT_THROW(testing::run_op(build_embedding, {table, negative}), InvalidArgument);
}

// loss = sum(embedding(table, ids) * w): the table's gradient must be sparse, n rows of w
// plus the ids, and scattered into [V, D] it must match central differences.
TEST(Embedding, GradientIsSparseAndMatchesNumeric) {
  Rng rng(64);
  const Shape table_shape{9, 4}, ids_shape{2, 3};
  const std::int64_t n = ids_shape.numel(), d = table_shape[1];
  Tensor table = random_tensor(table_shape, rng);
  Tensor ids = Tensor::from_vector<std::int32_t>(ids_shape, {3, 0, 3, 8, 1, 3});  // repeats
  Tensor w = random_tensor(Shape{2, 3, 4}, rng);

  Graph g;
  Value tv = g.placeholder("table", {DType::f32, table_shape});
  Value iv = g.placeholder("ids", {DType::i32, ids_shape});
  Value loss = ops::sum(g, ops::mul(g, ops::embedding(g, tv, iv), g.constant(w, "w")));
  std::vector<Value> wrt{tv};
  Gradient grad = gradients(g, loss, wrt)[0];
  ASSERT_TRUE(grad.sparse());
  EXPECT_EQ(g.spec(grad.values), (TensorSpec{DType::f32, Shape{n, d}}));
  EXPECT_EQ(g.spec(grad.indices), (TensorSpec{DType::i64, Shape{n}}));

  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference" : "fast");
    Executor exec(g, {grad.values, grad.indices}, testing::test_engine());
    VariableStore vars;
    RunOptions opts;
    opts.reference_kernels = reference;
    std::vector<Feed> feeds{{tv, table}, {iv, ids}};
    auto out = exec.run(feeds, vars, opts);
    EXPECT_EQ(out[0].to_vector<float>(), w.to_vector<float>());
    EXPECT_EQ(out[1].to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 0, 3, 8, 1, 3}));

    std::vector<double> dense(static_cast<std::size_t>(table_shape.numel()), 0.0);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < d; ++j)
        dense[out[1].data<std::int64_t>()[i] * d + j] += out[0].data<float>()[i * d + j];
    auto weighted = [&](const Tensor& t) {
      Tensor y = testing::run_op(build_embedding, {t, ids}, true, reference);
      double s = 0;
      for (std::int64_t i = 0; i < y.numel(); ++i) s += double(y.data<float>()[i]) * w.data<float>()[i];
      return s;
    };
    for (std::int64_t e = 0; e < table_shape.numel(); ++e) {
      Tensor plus = table.clone(), minus = table.clone();
      plus.data<float>()[e] += 1e-2f;
      minus.data<float>()[e] -= 1e-2f;
      double numeric = (weighted(plus) - weighted(minus)) / 2e-2;
      EXPECT_NEAR(dense[e], numeric, 1e-3) << "table element " << e;
    }
  }
}

TEST(Embedding, RejectsFloatIdsAndNonMatrixTables) {
  Graph g;
  Value table = g.placeholder("table", {DType::f32, Shape{5, 3}});
  EXPECT_THROW(ops::embedding(g, table, g.placeholder("f", {DType::f32, Shape{2}})), ShapeError);
  EXPECT_THROW(ops::embedding(g, g.placeholder("t3", {DType::f32, Shape{5, 3, 2}}),
                              g.placeholder("ids", {DType::i32, Shape{2}})),
               ShapeError);
}

}  // namespace
}  // namespace trib
