#include "engine/ops/fusion.h"

#include "trib/engine/op.h"

namespace trib::ops {

bool valid_value(const Graph& g, Value v) {
  return v.node >= 0 && static_cast<std::size_t>(v.node) < g.size() && v.index >= 0 &&
         static_cast<std::size_t>(v.index) < g.node(v.node).outputs.size();
}

const Fusable* fusable_producer(const Graph& g, Value x) {
  if (!valid_value(g, x) || x.index != 0) return nullptr;
  return dynamic_cast<const Fusable*>(g.node(x).op.get());
}

}  // namespace trib::ops
