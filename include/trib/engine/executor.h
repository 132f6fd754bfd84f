// Runs a graph: only the nodes the fetches need, ready nodes in parallel on the inter-op
// pool, each intermediate freed after its last reader and its memory recycled by a pool.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trib/core/allocator.h"
#include "trib/engine/context.h"
#include "trib/engine/graph.h"

namespace trib {

// Variables by name. Trainers, optimizers, checkpoints and parameter servers read and write
// it; graphs only refer to names.
class VariableStore {
 public:
  // Adds or replaces a variable.
  void set(const std::string& name, Tensor value);
  // Throws NotFound naming the variable.
  Tensor& get(const std::string& name);
  const Tensor& get(const std::string& name) const;
  bool contains(const std::string& name) const { return vars_.count(name) != 0; }
  std::vector<std::string> names() const;  // sorted
  std::size_t size() const { return vars_.size(); }

 private:
  std::unordered_map<std::string, Tensor> vars_;
};

struct Feed {
  Value placeholder;
  Tensor value;
};

struct RunOptions {
  // Dropout drops and batch norm uses batch statistics only while training.
  bool training = true;
  // Run the naive reference kernels instead of the fast ones (for tests).
  bool reference_kernels = false;
  // The training step random ops (dropout) draw for. A trainer passes its global step so
  // that a resumed run draws the same masks as an uninterrupted one; unset, the executor's
  // own run count is used.
  std::optional<std::uint64_t> step;
  // Called as soon as fetch i is computed, from the thread that computed it; lets gradient
  // communication start while the rest of backprop runs.
  std::function<void(std::size_t fetch_index, const Tensor& value)> on_fetch_ready;
};

class Executor {
 public:
  // Plans the run: which nodes the fetches need and how many readers each output has.
  Executor(const Graph& graph, std::vector<Value> fetches, const EngineContext& engine);
  ~Executor();

  // Throws InvalidArgument naming the placeholder if a feed is missing or of the wrong spec,
  // and NotFound naming the variable if the store lacks one. A kernel's error is rethrown
  // with the node's name in front.
  std::vector<Tensor> run(std::span<const Feed> feeds, VariableStore& variables,
                          const RunOptions& options = {});

  // Peak bytes of intermediate tensors during the last run (feeds and variables excluded).
  std::size_t last_peak_bytes() const { return last_peak_; }
  // Nodes the fetches need, in execution order.
  const std::vector<NodeId>& plan() const { return order_; }

 private:
  struct RunState;
  struct Slot;
  void run_node(RunState& st, NodeId id) const;
  // Releases inputs after their last reader; returns the consumers that became ready.
  std::vector<NodeId> finish_node(RunState& st, NodeId id) const;
  void run_parallel(RunState& st, ThreadPool& pool);
  std::size_t slot_of(Value v) const { return slot_base_[v.node] + v.index; }

  const Graph& graph_;
  std::vector<Value> fetches_;
  const EngineContext& engine_;
  std::vector<NodeId> order_;                   // needed nodes, ascending (topological)
  std::vector<std::vector<NodeId>> consumers_;  // per node: needed nodes reading it (deduplicated)
  std::vector<int> pending_inputs_;             // per node: distinct needed producers
  // Per (node, output), at slot_base_[node] + index:
  std::vector<std::size_t> slot_base_;
  std::vector<int> slot_readers_;           // consuming (node, input) pairs + fetches
  std::vector<std::uint8_t> needs_plain_;   // read by a kernel that wants plain, or fetched
  std::vector<std::uint8_t> layout_read_;   // read by a kernel accepting layouts
  // Per node: per input, its spec and whether the op accepts its layout.
  std::vector<std::vector<TensorSpec>> input_specs_;
  std::vector<std::vector<std::uint8_t>> accepts_layout_;
  std::vector<int> threads_;  // per node: the engine's intra-op threads, or 1 (Op::cost_ns)
  std::shared_ptr<PoolAllocator> pool_;
  std::uint64_t steps_ = 0;
  std::size_t last_peak_ = 0;
};

}  // namespace trib
