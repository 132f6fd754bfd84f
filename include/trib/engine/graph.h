// A dataflow graph: build it once (placeholders, variables, constants, operations), then run
// it with an Executor. Shapes are inferred as each node is added, so a mismatch is reported
// while building, naming both nodes. Nodes can only consume nodes added before them, so a
// graph is acyclic by construction and node ids are a topological order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "trib/core/tensor.h"

namespace trib {

class Op;

struct TensorSpec {
  DType dtype = DType::f32;
  Shape shape;
  bool operator==(const TensorSpec&) const = default;
  std::string to_string() const;  // "f32[64, 784]"
};

using NodeId = std::int32_t;

// One output of one node.
struct Value {
  NodeId node = -1;
  int index = 0;
  bool valid() const { return node >= 0; }
  bool operator==(const Value&) const = default;
};

struct Node {
  NodeId id = -1;
  std::string name;
  std::shared_ptr<const Op> op;
  std::vector<Value> inputs;
  std::vector<TensorSpec> outputs;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // A value fed at run time.
  Value placeholder(const std::string& name, TensorSpec spec);
  // A trainable (or state) tensor that lives in a VariableStore under `name`.
  Value variable(const std::string& name, TensorSpec spec);
  Value constant(Tensor value, const std::string& name = "");

  // Adds an operation; infers its output specs. `name` may be empty (one is generated).
  // Throws ShapeError naming this node, its inputs and their specs if they do not fit.
  std::vector<Value> add(std::shared_ptr<const Op> op, std::vector<Value> inputs,
                         const std::string& name = "");
  Value add1(std::shared_ptr<const Op> op, std::vector<Value> inputs, const std::string& name = "") {
    return add(std::move(op), std::move(inputs), name)[0];
  }

  const Node& node(NodeId id) const;
  const Node& node(Value v) const { return node(v.node); }
  const TensorSpec& spec(Value v) const;
  std::size_t size() const { return nodes_.size(); }
  const std::vector<Node>& nodes() const { return nodes_; }
  // Throws NotFound naming the missing node.
  Value find(const std::string& name) const;
  bool contains(const std::string& name) const { return by_name_.count(name) != 0; }
  // "'dense1/matmul' (matmul)", or "'x' (placeholder)"; output index shown when not 0.
  std::string describe(Value v) const;

  std::vector<Value> variables() const;
  std::vector<Value> placeholders() const;

  // Prefix for generated and given node names, for example "dense1/"; see NameScope.
  void push_scope(const std::string& prefix);
  void pop_scope();

 private:
  NodeId append(std::shared_ptr<const Op> op, std::vector<Value> inputs, std::string name,
                std::vector<TensorSpec> outputs);
  std::string unique_name(const std::string& requested, std::string_view op_name);
  void check_value(Value v, const std::string& user) const;

  std::vector<Node> nodes_;
  std::unordered_map<std::string, NodeId> by_name_;
  std::unordered_map<std::string, int> name_counts_;
  std::vector<std::string> scopes_;
};

// RAII name scope: nodes created while it lives get "prefix/" in front of their names.
class NameScope {
 public:
  NameScope(Graph& g, const std::string& prefix) : g_(g) { g_.push_scope(prefix); }
  ~NameScope() { g_.pop_scope(); }
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;

 private:
  Graph& g_;
};

}  // namespace trib
