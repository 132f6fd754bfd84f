// Build-time fusion. Layers build convolutions and dense layers as conv2d or matmul, then
// bias_add, then an activation: three nodes, each a full pass over the activations. When
// bias_add or relu is added right after an op that can absorb it, the builder adds one fused
// node instead (conv2d_bias_relu, matmul_bias_relu, ...), computed by a single oneDNN
// primitive with the bias and a ReLU post-op, whose gradient reads its own output. The
// unfused node stays in the graph and runs only if something else reads it.
//
// Max pooling after a ReLU is rebuilt as the ReLU after the pooling: max(relu(x)) equals
// relu(max(x)) value for value, and the gradients agree too (both pass dy to the window's
// first maximum when it is positive, nothing otherwise). The ReLU and its gradient then run
// on the pooled tensor, a quarter of the size for 2x2 windows, and the convolution's output
// is dead as soon as it is pooled.
#pragma once

#include <optional>
#include <string>

#include "trib/engine/graph.h"
#include "trib/engine/ops.h"

namespace trib::ops {

// Implemented by ops that can absorb a following bias_add or relu.
class Fusable {
 public:
  virtual ~Fusable() = default;
  // The fused node computing bias_add(self, bias), or nullopt when this node cannot take one.
  virtual std::optional<Value> fuse_bias(Graph& g, const Node& self, Value bias,
                                         const std::string& name) const = 0;
  // The fused node computing relu(self), or nullopt.
  virtual std::optional<Value> fuse_relu(Graph& g, const Node& self, const std::string& name) const = 0;
  // When self applies a ReLU: a node computing self without it, else nullopt.
  virtual std::optional<Value> without_relu(Graph& g, const Node& self) const = 0;
};

// Whether v names an existing output (fusion checks must not preempt the graph's own errors).
bool valid_value(const Graph& g, Value v);

// The Fusable op producing x (output 0 only), or null.
const Fusable* fusable_producer(const Graph& g, Value x);

// The fused nodes themselves (tests build them directly). `bias` invalid: none.
Value conv2d_fused(Graph& g, Value x, Value w, Value bias, bool relu, Conv2dOptions opts,
                   const std::string& name = "");
Value matmul_fused(Graph& g, Value a, Value b, bool transpose_a, bool transpose_b, Value bias,
                   bool relu, const std::string& name = "");

}  // namespace trib::ops
