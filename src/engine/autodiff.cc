#include "trib/engine/autodiff.h"

#include <map>

#include "trib/engine/ops.h"

namespace trib {
namespace {

// Sums the contributions to one value: dense ones with add, sparse ones by concatenating
// their rows and indices (so an embedding table never gets a dense gradient), and both kinds
// together by scattering the sparse rows into a dense tensor.
Gradient accumulate(Graph& g, const TensorSpec& spec, const std::vector<Gradient>& parts) {
  Value dense;
  std::vector<Value> rows, ids;
  for (const Gradient& p : parts) {
    if (p.sparse()) {
      rows.push_back(p.values);
      ids.push_back(p.indices);
    } else {
      dense = dense.valid() ? ops::add(g, dense, p.values) : p.values;
    }
  }
  if (rows.empty()) return {dense, {}};
  Value all_rows = rows.size() == 1 ? rows[0] : ops::concat(g, rows, 0);
  Value all_ids = ids.size() == 1 ? ids[0] : ops::concat(g, ids, 0);
  if (!dense.valid()) return {all_rows, all_ids};
  return {ops::add(g, dense, ops::scatter_add(g, all_rows, all_ids, spec.shape)), {}};
}

}  // namespace

std::vector<Gradient> gradients(Graph& graph, Value loss, std::span<const Value> wrt) {
  const TensorSpec& loss_spec = graph.spec(loss);
  TRIB_CHECK(loss_spec.dtype == DType::f32 && loss_spec.shape.numel() == 1, InvalidArgument,
             "gradients need a scalar f32 loss, but {} is {}", graph.describe(loss),
             loss_spec.to_string());
  const NodeId last = loss.node;
  const std::size_t n = static_cast<std::size_t>(last) + 1;

  // Nodes on a path from some wrt value to the loss: reachable forward from wrt...
  std::vector<bool> from_wrt(n, false);
  for (const Value& w : wrt) {
    graph.spec(w);
    if (w.node <= last) from_wrt[w.node] = true;
  }
  for (NodeId id = 0; id <= last; ++id) {
    if (from_wrt[id]) continue;
    for (const Value& in : graph.node(id).inputs)
      if (from_wrt[in.node]) {
        from_wrt[id] = true;
        break;
      }
  }
  // ...and backward from the loss.
  std::vector<bool> relevant(n, false);
  relevant[last] = from_wrt[last];
  for (NodeId id = last; id >= 0; --id) {
    if (!relevant[id]) continue;
    for (const Value& in : graph.node(id).inputs)
      if (from_wrt[in.node]) relevant[in.node] = true;
  }

  // Contributions per value, keyed by (node, output).
  std::map<std::pair<NodeId, int>, std::vector<Gradient>> contributions;
  contributions[{loss.node, loss.index}].push_back(
      {ops::fill(graph, loss_spec, 1.0f, "grad/loss_seed"), {}});

  for (NodeId id = last; id >= 0; --id) {
    if (!relevant[id]) continue;
    // Copy: adding gradient nodes may reallocate the node list.
    const Node node = graph.node(id);
    if (node.op->kind() != Op::Kind::compute) continue;
    std::vector<Value> out_grads(node.outputs.size());
    bool any = false;
    for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) {
      auto it = contributions.find({id, i});
      if (it == contributions.end()) continue;
      Gradient sum = accumulate(graph, node.outputs[i], it->second);
      if (sum.sparse())  // only a table reads sparse gradients; outputs always get dense ones
        sum = {ops::scatter_add(graph, sum.values, sum.indices, node.outputs[i].shape), {}};
      out_grads[i] = sum.values;
      any = true;
      // Keep the sum as the only contribution, in case this value is also in wrt.
      it->second = {sum};
    }
    if (!any) continue;
    GradContext ctx{graph, node, out_grads};
    std::vector<Gradient> in_grads;
    {
      NameScope scope(graph, "grad/" + node.name);
      in_grads = node.op->gradient(ctx);
    }
    TRIB_CHECK(in_grads.size() <= node.inputs.size(), Error,
               "{} '{}' returned {} gradients for {} inputs", node.op->name(), node.name,
               in_grads.size(), node.inputs.size());
    for (std::size_t i = 0; i < in_grads.size(); ++i) {
      const Value& in = node.inputs[i];
      if (!in_grads[i].defined() || !from_wrt[in.node]) continue;
      contributions[{in.node, in.index}].push_back(in_grads[i]);
    }
  }

  std::vector<Gradient> result;
  for (const Value& w : wrt) {
    auto it = contributions.find({w.node, w.index});
    if (it == contributions.end()) {
      const TensorSpec& s = graph.spec(w);
      result.push_back({ops::fill(graph, s, 0.0f), {}});
    } else {
      result.push_back(accumulate(graph, graph.spec(w), it->second));
    }
  }
  return result;
}

}  // namespace trib
