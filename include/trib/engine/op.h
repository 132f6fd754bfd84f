// The operation interface. Each op is a small immutable class holding its attributes; it
// infers output specs, computes with a fast kernel and with a naive reference kernel (which
// tests compare), and adds its own gradient nodes to the graph.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trib/core/random.h"
#include "trib/engine/graph.h"

namespace trib {

class EngineContext;

// What a kernel sees while it runs: its inputs, a way to allocate outputs from the step's
// memory pool, and the run's settings.
class KernelContext {
 public:
  KernelContext(const EngineContext& engine, const Node& node, std::span<const Tensor> inputs,
                std::vector<Tensor>& outputs, Allocator& alloc, bool training, std::uint64_t step)
      : engine_(engine), node_(node), inputs_(inputs), outputs_(outputs), alloc_(alloc),
        training_(training), step_(step) {}

  const Tensor& input(int i) const { return inputs_[i]; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Allocates output i with its inferred spec (uninitialised) and returns it.
  Tensor& output(int i);
  // Allocates output i and fills it with zeros.
  Tensor& output_zeros(int i);
  // Sets output i to an existing tensor (a view of an input, for example).
  void set_output(int i, Tensor t);
  // Output i reusing input `in`'s storage when this node is its only remaining reader and
  // the specs match, else a fresh allocation. For element-wise ops that can run in place.
  Tensor& output_reusing(int i, int in);
  const TensorSpec& output_spec(int i) const { return node_.outputs[i]; }

  const Node& node() const { return node_; }
  const EngineContext& engine() const { return engine_; }
  Allocator& allocator() const { return alloc_; }
  int intra_op_threads() const;
  bool training() const { return training_; }
  // How many times this executor has run: gives random ops a fresh stream per step.
  std::uint64_t step() const { return step_; }

  // Set by the executor: input i may be overwritten (no other reader remains).
  std::vector<bool> input_is_last_use;

 private:
  const EngineContext& engine_;
  const Node& node_;
  std::span<const Tensor> inputs_;
  std::vector<Tensor>& outputs_;
  Allocator& alloc_;
  bool training_;
  std::uint64_t step_;
};

// A gradient: dense, or sparse as rows plus the indices of the rows they belong to.
struct Gradient {
  Value values;   // dense gradient, or the rows [n, ...] when sparse
  Value indices;  // i64 [n] row indices when sparse; invalid when dense
  bool defined() const { return values.valid(); }
  bool sparse() const { return indices.valid(); }
};

// What an op's gradient function sees: the graph to add nodes to, the forward node, and the
// gradient flowing into each of its outputs (invalid where none flows).
struct GradContext {
  Graph& graph;
  const Node& node;
  std::span<const Value> output_grads;

  Value input(int i) const { return node.inputs[i]; }
  Value output(int i) const { return Value{node.id, i}; }
  const TensorSpec& input_spec(int i) const { return graph.spec(node.inputs[i]); }
  Value grad(int i = 0) const { return output_grads[i]; }
};

class Op {
 public:
  virtual ~Op() = default;
  virtual std::string_view name() const = 0;

  // Output specs from input specs. Throws ShapeError with what was expected; the graph adds
  // the node's and inputs' names and specs to the message.
  virtual std::vector<TensorSpec> infer(std::span<const TensorSpec> inputs) const = 0;

  // The fast kernel.
  virtual void compute(KernelContext& ctx) const = 0;
  // The naive reference kernel; tests compare compute() against it.
  virtual void reference(KernelContext& ctx) const { compute(ctx); }

  // Gradients with respect to each input (Gradient{} where none). The default says the op
  // is not differentiable.
  virtual std::vector<Gradient> gradient(GradContext& ctx) const;

  // Placeholders, variables and constants are sources the executor fills itself.
  enum class Kind { compute, placeholder, variable, constant };
  virtual Kind kind() const { return Kind::compute; }
};

}  // namespace trib
