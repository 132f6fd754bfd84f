// The operation interface. Each op is a small immutable class holding its attributes; it
// infers output specs, computes with a fast kernel and with a naive reference kernel (which
// tests compare), and adds its own gradient nodes to the graph.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trib/core/random.h"
#include "trib/engine/graph.h"

namespace trib {

class EngineContext;

namespace kernels {
class MemoryLayout;
}
// How a value is stored when not plain row-major (a oneDNN blocked format); opaque outside
// the engine's kernels. Null means plain.
using LayoutPtr = std::shared_ptr<const kernels::MemoryLayout>;

// What a kernel sees while it runs: its inputs, a way to allocate outputs from the step's
// memory pool, and the run's settings.
class KernelContext {
 public:
  // Per input: its tensor, spec, layout and whether this node is its last reader.
  KernelContext(const EngineContext& engine, const Node& node, std::span<const Tensor> inputs,
                std::span<const TensorSpec> input_specs, std::span<const LayoutPtr> input_layouts,
                std::span<const std::uint8_t> input_is_last_use, std::span<Tensor> outputs,
                std::span<LayoutPtr> output_layouts, Allocator& alloc, int threads, bool training,
                std::uint64_t step)
      : engine_(engine), node_(node), inputs_(inputs), input_specs_(input_specs),
        input_layouts_(input_layouts), last_use_(input_is_last_use), outputs_(outputs),
        output_layouts_(output_layouts), alloc_(alloc), threads_(threads), training_(training),
        step_(step) {}

  const Tensor& input(int i) const { return inputs_[i]; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Input i's layout: null (plain) unless the op accepts layouts on input i.
  const LayoutPtr& input_layout(int i) const { return input_layouts_[i]; }
  const TensorSpec& input_spec(int i) const { return input_specs_[i]; }
  // Whether input i may be overwritten (no other reader remains).
  bool input_is_last_use(int i) const { return last_use_[i] != 0; }

  // Allocates output i with its inferred spec (uninitialised) and returns it.
  Tensor& output(int i);
  // Allocates output i and fills it with zeros.
  Tensor& output_zeros(int i);
  // Allocates output i stored in `layout` (plain when null): an opaque buffer of the
  // layout's size, which only kernels accepting layouts read.
  Tensor& output_in_layout(int i, LayoutPtr layout);
  // Sets output i to an existing tensor (a view of an input, for example).
  void set_output(int i, Tensor t);
  // Output i reusing input `in`'s storage when this node is its only remaining reader and
  // the specs match, else a fresh allocation. For element-wise ops that can run in place.
  // Output i gets input `in`'s layout (a plain input unless the op accepts its layout).
  Tensor& output_reusing(int i, int in);
  const TensorSpec& output_spec(int i) const { return node_.outputs[i]; }
  const LayoutPtr& output_layout(int i) const { return output_layouts_[i]; }

  const Node& node() const { return node_; }
  const EngineContext& engine() const { return engine_; }
  Allocator& allocator() const { return alloc_; }
  // Threads this kernel may use: the engine's intra-op count, or 1 for a node too small to
  // repay waking a second thread (Op::cost_ns).
  int intra_op_threads() const { return threads_; }
  bool training() const { return training_; }
  // How many times this executor has run: gives random ops a fresh stream per step.
  std::uint64_t step() const { return step_; }

 private:
  const EngineContext& engine_;
  const Node& node_;
  std::span<const Tensor> inputs_;
  std::span<const TensorSpec> input_specs_;
  std::span<const LayoutPtr> input_layouts_;
  std::span<const std::uint8_t> last_use_;
  std::span<Tensor> outputs_;
  std::span<LayoutPtr> output_layouts_;
  Allocator& alloc_;
  int threads_;
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

  // Whether the fast kernel takes input i in any layout (KernelContext::input_layout), as
  // the oneDNN convolution and pooling kernels do. Otherwise the executor hands it a plain
  // row-major tensor, converting when the producer wrote another layout.
  virtual bool accepts_layout(int /*input*/) const { return false; }

  // Estimated time of the fast kernel on one thread, in nanoseconds, from the specs. The
  // executor runs a node estimated under about 50 us on one thread: waking a second costs
  // more than it saves, and far more when the machine is busy. The default counts the bytes
  // read and written at 10 GB/s, right for element-wise and memory-bound ops; matmul and
  // convolution count their multiply-adds.
  virtual double cost_ns(std::span<const TensorSpec> inputs, std::span<const TensorSpec> outputs) const;
};

}  // namespace trib
