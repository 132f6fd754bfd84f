// Builders for the backward ops of the neural-network layers (activation.cc, softmax.cc,
// cross_entropy.cc, conv2d_backward.cc, pool.cc, batch_norm.cc, embedding.cc). Internal: the
// layers' gradient functions call them, and the unit tests check each against its reference
// kernel. They have no gradients of their own.
#pragma once

#include <vector>

#include "trib/engine/ops.h"

namespace trib::ops::backward {

enum class Activation { relu, sigmoid, tanh };
// dx from dy and the activation's output y. The output, not the input: the forward op runs
// in place, so its input is gone by the time the gradient runs.
Value activation(Graph& g, Activation kind, Value dy, Value y);

// A dense layer's fused bias and ReLU, backward: d = dy where y > 0, and db = d summed over
// the rows of [N, C].
struct BiasReluGrads {
  Value d, db;
};
BiasReluGrads bias_relu(Graph& g, Value dy, Value y);

// dx from dy and the output y of softmax (log = false) or log_softmax (log = true).
Value softmax(Graph& g, Value dy, Value y, bool log);

// d(loss)/d(logits) = (softmax(logits) - onehot(labels)) / N * dloss, for a scalar dloss.
Value softmax_cross_entropy(Graph& g, Value logits, Value labels, Value dloss);

// dx [N, C, H, W] from dy and w; dw [O, C, KH, KW] from x and dy; and dw with the bias
// gradient db [O] (dy summed over N, OH, OW) from one node.
Value conv2d_data(Graph& g, Value dy, Value w, Shape x_shape, Conv2dOptions opts);
Value conv2d_weights(Graph& g, Value x, Value dy, Shape w_shape, Conv2dOptions opts);
struct WeightsAndBias {
  Value dw, db;
};
WeightsAndBias conv2d_weights_and_bias(Graph& g, Value x, Value dy, Shape w_shape, Conv2dOptions opts);

// max_pool2d's forward node: {y, workspace}. The workspace records where each maximum came
// from; it is opaque, read only by max_pool2d_data of the same run (fast and reference
// kernels each write and read their own encoding).
std::vector<Value> max_pool2d_with_workspace(Graph& g, Value x, Pool2dOptions opts);
Value max_pool2d_data(Graph& g, Value dy, Value workspace, Shape x_shape, Pool2dOptions opts);
Value avg_pool2d_data(Graph& g, Value dy, Shape x_shape, Pool2dOptions opts);

struct BatchNormGrads {
  Value dx, dgamma, dbeta;
};
// From dy, the forward inputs x, gamma and beta, and the statistics the forward used (its
// batch_mean and batch_var outputs). Training differentiates through the batch statistics;
// inference treats them as constants.
BatchNormGrads batch_norm(Graph& g, Value dy, Value x, Value gamma, Value beta, Value mean,
                          Value var, float epsilon);

// ids of any shape and integer dtype -> i64 [n]: the row indices of embedding's sparse
// gradient.
Value embedding_indices(Graph& g, Value ids);

}  // namespace trib::ops::backward
