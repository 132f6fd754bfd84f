// Builders for every operation: each adds one node (or a few) to the graph and returns its
// output. Shapes are checked here, at build time. Layouts: images are NCHW, convolution
// weights OIHW, dense weights [in, out].
#pragma once

#include <cstdint>
#include <vector>

#include "trib/engine/graph.h"

namespace trib::ops {

// ---- math (ops/math_*.cc) ----
Value matmul(Graph& g, Value a, Value b, bool transpose_a = false, bool transpose_b = false,
             const std::string& name = "");
// Element-wise with NumPy broadcasting.
Value add(Graph& g, Value a, Value b, const std::string& name = "");
Value sub(Graph& g, Value a, Value b, const std::string& name = "");
Value mul(Graph& g, Value a, Value b, const std::string& name = "");
Value div(Graph& g, Value a, Value b, const std::string& name = "");
// x * factor (a constant), without a broadcast tensor.
Value scale(Graph& g, Value x, float factor, const std::string& name = "");
// Adds bias [C] along axis 1 of x ([N, C] or [N, C, H, W]).
Value bias_add(Graph& g, Value x, Value bias, const std::string& name = "");

// ---- activations (ops/activation.cc) ----
Value relu(Graph& g, Value x, const std::string& name = "");
Value sigmoid(Graph& g, Value x, const std::string& name = "");
Value tanh(Graph& g, Value x, const std::string& name = "");
// Over the last axis.
Value softmax(Graph& g, Value x, const std::string& name = "");
Value log_softmax(Graph& g, Value x, const std::string& name = "");
// Mean over the batch of -log softmax(logits)[label]; logits [N, C], labels i32/i64 [N].
// Fused and numerically stable. A label outside [0, C) is a run-time error naming it.
Value softmax_cross_entropy(Graph& g, Value logits, Value labels, const std::string& name = "");

// ---- reductions (ops/reduce.cc); empty axes means all axes ----
Value sum(Graph& g, Value x, std::vector<int> axes = {}, bool keepdims = false,
          const std::string& name = "");
Value mean(Graph& g, Value x, std::vector<int> axes = {}, bool keepdims = false,
           const std::string& name = "");

// ---- shape (ops/shape_*.cc) ----
Value reshape(Graph& g, Value x, Shape shape, const std::string& name = "");
// [N, ...] -> [N, product of the rest]
Value flatten(Graph& g, Value x, const std::string& name = "");
Value transpose(Graph& g, Value x, std::vector<int> perm, const std::string& name = "");
Value concat(Graph& g, std::vector<Value> xs, int axis, const std::string& name = "");
// Elements [begin[i], begin[i] + size[i]) along each axis.
Value slice(Graph& g, Value x, std::vector<std::int64_t> begin, std::vector<std::int64_t> size,
            const std::string& name = "");
// Broadcasts x to `shape` (NumPy rules) and its inverse for gradients: sums the broadcast axes.
Value broadcast_to(Graph& g, Value x, Shape shape, const std::string& name = "");
Value sum_to(Graph& g, Value x, Shape shape, const std::string& name = "");
Value fill(Graph& g, TensorSpec spec, float value, const std::string& name = "");

// ---- neural-network layers (ops/conv.cc, ops/pool.cc, ops/norm.cc, ...) ----
struct Conv2dOptions {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
};
// x [N, C, H, W], w [O, C, KH, KW] -> [N, O, OH, OW]
Value conv2d(Graph& g, Value x, Value w, Conv2dOptions opts = {}, const std::string& name = "");

struct Pool2dOptions {
  int kernel_h = 2, kernel_w = 2;
  int stride_h = 2, stride_w = 2;
  int pad_h = 0, pad_w = 0;
};
Value max_pool2d(Graph& g, Value x, Pool2dOptions opts = {}, const std::string& name = "");
// Padding cells are excluded from the average.
Value avg_pool2d(Graph& g, Value x, Pool2dOptions opts = {}, const std::string& name = "");

// Zeroes each element with probability `rate` and scales the rest by 1/(1-rate) while
// training; the identity at inference. The mask is a pure function of (seed, step, index).
Value dropout(Graph& g, Value x, float rate, std::uint64_t seed, const std::string& name = "");

struct BatchNormOutputs {
  Value y;
  Value batch_mean;  // [C]: the statistics used (running ones at inference)
  Value batch_var;   // [C]: biased variance of the batch
};
// Normalises over every axis but 1 (channels). Training uses the batch's statistics;
// inference uses running_mean/running_var. Updating the running statistics from batch_mean
// and batch_var is the caller's job (a layer does it after each step).
BatchNormOutputs batch_norm(Graph& g, Value x, Value gamma, Value beta, Value running_mean,
                            Value running_var, float epsilon = 1e-5f, const std::string& name = "");

// table [V, D], ids i32/i64 of any shape -> ids.shape + [D]. Its gradient with respect to the
// table is sparse: the output gradient's rows plus the ids. An id outside [0, V) is a run-time
// error naming it.
Value embedding(Graph& g, Value table, Value ids, const std::string& name = "");
// Dense [V, D] from sparse rows [n, D] and ids [n] (duplicates summed); used only where a
// sparse gradient meets a dense one.
Value scatter_add(Graph& g, Value rows, Value ids, Shape dense_shape, const std::string& name = "");

}  // namespace trib::ops
