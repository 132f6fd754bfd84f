#include "trib/engine/graph.h"

#include <algorithm>

#include "engine/ops/source_ops.h"
#include "trib/engine/op.h"

namespace trib {

std::string TensorSpec::to_string() const {
  return fmt::format("{}{}", dtype_name(dtype), shape.to_string());
}

Value Graph::placeholder(const std::string& name, TensorSpec spec) {
  TRIB_CHECK(!name.empty(), InvalidArgument, "a placeholder needs a name");
  return {append(std::make_shared<PlaceholderOp>(), {}, unique_name(name, "placeholder"), {spec}), 0};
}

Value Graph::variable(const std::string& name, TensorSpec spec) {
  TRIB_CHECK(!name.empty(), InvalidArgument, "a variable needs a name");
  return {append(std::make_shared<VariableOp>(), {}, unique_name(name, "variable"), {spec}), 0};
}

Value Graph::constant(Tensor value, const std::string& name) {
  TRIB_CHECK(value.defined(), InvalidArgument, "constant '{}' has no value", name);
  TensorSpec spec{value.dtype(), value.shape()};
  auto op = std::make_shared<ConstantOp>(std::move(value));
  return {append(std::move(op), {}, unique_name(name, "constant"), {spec}), 0};
}

std::vector<Value> Graph::add(std::shared_ptr<const Op> op, std::vector<Value> inputs,
                              const std::string& name) {
  std::string full = unique_name(name, op->name());
  std::vector<TensorSpec> in_specs;
  in_specs.reserve(inputs.size());
  for (const Value& v : inputs) {
    check_value(v, full);
    in_specs.push_back(spec(v));
  }
  std::vector<TensorSpec> out;
  try {
    out = op->infer(in_specs);
  } catch (const InvalidArgument& e) {
    std::string ins;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      ins += fmt::format("{}{} {}", i ? ", " : "", describe(inputs[i]), in_specs[i].to_string());
    throw ShapeError(fmt::format("{} '{}' cannot take its inputs ({}): {}", op->name(), full, ins,
                                 e.what()));
  }
  NodeId id = append(std::move(op), std::move(inputs), full, std::move(out));
  std::vector<Value> values;
  for (int i = 0; i < static_cast<int>(nodes_[id].outputs.size()); ++i) values.push_back({id, i});
  return values;
}

NodeId Graph::append(std::shared_ptr<const Op> op, std::vector<Value> inputs, std::string name,
                     std::vector<TensorSpec> outputs) {
  NodeId id = static_cast<NodeId>(nodes_.size());
  by_name_.emplace(name, id);
  nodes_.push_back(Node{id, std::move(name), std::move(op), std::move(inputs), std::move(outputs)});
  return id;
}

std::string Graph::unique_name(const std::string& requested, std::string_view op_name) {
  std::string prefix;
  for (const auto& s : scopes_) prefix += s + "/";
  if (!requested.empty()) {
    std::string full = prefix + requested;
    TRIB_CHECK(!by_name_.count(full), InvalidArgument,
               "a node named '{}' already exists; node names must be unique", full);
    return full;
  }
  std::string base = prefix + std::string(op_name);
  for (;;) {
    std::string candidate = fmt::format("{}_{}", base, name_counts_[base]++);
    if (!by_name_.count(candidate)) return candidate;
  }
}

void Graph::check_value(Value v, const std::string& user) const {
  TRIB_CHECK(v.node >= 0 && v.node < static_cast<NodeId>(nodes_.size()), InvalidArgument,
             "node '{}' reads node #{}, which does not exist (a node can only read nodes added "
             "before it, which keeps graphs acyclic)",
             user, v.node);
  TRIB_CHECK(v.index >= 0 && v.index < static_cast<int>(nodes_[v.node].outputs.size()),
             InvalidArgument, "node '{}' reads output {} of '{}', which has {} outputs", user,
             v.index, nodes_[v.node].name, nodes_[v.node].outputs.size());
}

const Node& Graph::node(NodeId id) const {
  TRIB_CHECK(id >= 0 && id < static_cast<NodeId>(nodes_.size()), NotFound,
             "no node #{} in a graph of {} nodes", id, nodes_.size());
  return nodes_[id];
}

const TensorSpec& Graph::spec(Value v) const {
  check_value(v, "<query>");
  return nodes_[v.node].outputs[v.index];
}

Value Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  TRIB_CHECK(it != by_name_.end(), NotFound, "no node named '{}' in the graph", name);
  return {it->second, 0};
}

std::string Graph::describe(Value v) const {
  const Node& n = node(v.node);
  if (v.index == 0) return fmt::format("'{}' ({})", n.name, n.op->name());
  return fmt::format("'{}':{} ({})", n.name, v.index, n.op->name());
}

std::vector<Value> Graph::variables() const {
  std::vector<Value> out;
  for (const Node& n : nodes_)
    if (n.op->kind() == Op::Kind::variable) out.push_back({n.id, 0});
  return out;
}

std::vector<Value> Graph::placeholders() const {
  std::vector<Value> out;
  for (const Node& n : nodes_)
    if (n.op->kind() == Op::Kind::placeholder) out.push_back({n.id, 0});
  return out;
}

void Graph::push_scope(const std::string& prefix) { scopes_.push_back(prefix); }
void Graph::pop_scope() {
  if (!scopes_.empty()) scopes_.pop_back();
}

}  // namespace trib
