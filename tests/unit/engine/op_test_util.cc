#include "op_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "trib/engine/autodiff.h"
#include "trib/engine/executor.h"
#include "trib/engine/op.h"

namespace trib::testing {
namespace {

// loss = sum(y * w) for a fixed random w: its gradient with respect to y is w, so the
// checked gradient exercises every element of the op's output gradient. Test-only: it
// assumes it is the loss (its incoming gradient is 1).
class WeightedSumOp final : public Op {
 public:
  std::string_view name() const override { return "weighted_sum"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec> in) const override {
    if (in[0] != in[1]) throw ShapeError("weights must match the output");
    return {TensorSpec{DType::f32, Shape{}}};
  }
  void compute(KernelContext& ctx) const override {
    const float* y = ctx.input(0).data<float>();
    const float* w = ctx.input(1).data<float>();
    double s = 0;
    for (std::int64_t i = 0; i < ctx.input(0).numel(); ++i) s += double(y[i]) * w[i];
    ctx.output(0).data<float>()[0] = static_cast<float>(s);
  }
  std::vector<Gradient> gradient(GradContext& ctx) const override {
    return {Gradient{ctx.input(1), {}}, Gradient{}};
  }
};

struct Built {
  Graph graph;
  std::vector<Value> inputs;
  Value output;
};

Built build_graph(const OpBuilder& build, const std::vector<Tensor>& inputs) {
  Built b;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    b.inputs.push_back(b.graph.placeholder("in" + std::to_string(i),
                                           {inputs[i].dtype(), inputs[i].shape()}));
  b.output = build(b.graph, b.inputs);
  return b;
}

std::vector<Feed> feeds_for(const Built& b, const std::vector<Tensor>& inputs) {
  std::vector<Feed> feeds;
  for (std::size_t i = 0; i < inputs.size(); ++i) feeds.push_back({b.inputs[i], inputs[i]});
  return feeds;
}

double weighted_sum(const Tensor& y, const Tensor& w) {
  double s = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i) s += double(y.data<float>()[i]) * w.data<float>()[i];
  return s;
}

}  // namespace

Tensor random_tensor(const Shape& shape, Rng& rng, float lo, float hi) {
  Tensor t = Tensor::empty(DType::f32, shape);
  for (float& v : t.span<float>()) v = rng.uniform(lo, hi);
  return t;
}

Tensor random_ints(const Shape& shape, Rng& rng, std::int64_t below, DType dtype) {
  Tensor t = Tensor::empty(dtype, shape);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    auto v = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(below)));
    if (dtype == DType::i32) t.data<std::int32_t>()[i] = static_cast<std::int32_t>(v);
    else t.data<std::int64_t>()[i] = v;
  }
  return t;
}

const EngineContext& test_engine() {
  // Every node on both threads, however small, so the tests' small shapes take the
  // kernels' parallel paths.
  static EngineContext engine(EngineOptions{2, 2, 0});
  return engine;
}

Tensor run_op(const OpBuilder& build, const std::vector<Tensor>& inputs, bool training,
              bool reference) {
  Built b = build_graph(build, inputs);
  Executor exec(b.graph, {b.output}, test_engine());
  VariableStore vars;
  RunOptions opts;
  opts.training = training;
  opts.reference_kernels = reference;
  return exec.run(feeds_for(b, inputs), vars, opts)[0];
}

void expect_fast_matches_reference(const OpBuilder& build, const std::vector<Tensor>& inputs,
                                   float tol, bool training) {
  Tensor fast = run_op(build, inputs, training, false);
  Tensor ref = run_op(build, inputs, training, true);
  ASSERT_EQ(fast.spec_string(), ref.spec_string());
  if (fast.dtype() != DType::f32) {
    ASSERT_EQ(std::memcmp(fast.raw_data(), ref.raw_data(), fast.nbytes()), 0);
    return;
  }
  int reported = 0;
  for (std::int64_t i = 0; i < fast.numel(); ++i) {
    float a = fast.data<float>()[i], r = ref.data<float>()[i];
    if (!(std::fabs(a - r) <= tol * (1.0f + std::fabs(r)))) {
      ADD_FAILURE() << "element " << i << ": fast " << a << " vs reference " << r;
      if (++reported == 5) return;
    }
  }
}

void expect_gradients_match_numeric(const OpBuilder& build, const std::vector<Tensor>& inputs,
                                    const std::vector<int>& wrt, GradCheckOptions opts) {
  Built b = build_graph(build, inputs);
  const TensorSpec& out_spec = b.graph.spec(b.output);
  ASSERT_EQ(out_spec.dtype, DType::f32);
  Rng rng(1234);
  Tensor w = random_tensor(out_spec.shape, rng);
  Value wv = b.graph.constant(w, "grad_check_weights");
  Value loss = b.graph.add1(std::make_shared<WeightedSumOp>(), {b.output, wv}, "grad_check_loss");
  std::vector<Value> wrt_values;
  for (int i : wrt) wrt_values.push_back(b.inputs[i]);
  std::vector<Gradient> grads = gradients(b.graph, loss, wrt_values);
  std::vector<Value> fetches;
  for (const Gradient& g : grads) {
    ASSERT_FALSE(g.sparse()) << "grad check compares dense gradients";
    fetches.push_back(g.values);
  }

  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference kernels" : "fast kernels");
    RunOptions ro;
    ro.training = opts.training;
    ro.reference_kernels = reference;
    VariableStore vars;
    Executor exec(b.graph, fetches, test_engine());
    std::vector<Tensor> analytic = exec.run(feeds_for(b, inputs), vars, ro);

    for (std::size_t k = 0; k < wrt.size(); ++k) {
      int idx = wrt[k];
      const Tensor& base = inputs[idx];
      ASSERT_EQ(analytic[k].shape(), base.shape()) << "gradient of input " << idx;
      std::int64_t n = base.numel();
      std::int64_t stride = std::max<std::int64_t>(1, n / opts.max_elements);
      int reported = 0;
      for (std::int64_t e = 0; e < n; e += stride) {
        auto eval = [&](float delta) {
          std::vector<Tensor> in = inputs;
          in[idx] = base.clone();
          in[idx].data<float>()[e] += delta;
          // A fresh executor per evaluation: random ops then draw the same mask every time.
          return weighted_sum(run_op(build, in, opts.training, reference), w);
        };
        double numeric = (eval(opts.epsilon) - eval(-opts.epsilon)) / (2.0 * opts.epsilon);
        double got = analytic[k].data<float>()[e];
        if (!(std::fabs(got - numeric) <= opts.tolerance * std::max(1.0, std::fabs(numeric)))) {
          ADD_FAILURE() << "d/d input" << idx << "[" << e << "]: analytic " << got
                        << " vs numeric " << numeric;
          if (++reported == 5) break;
        }
      }
    }
  }
}

}  // namespace trib::testing
