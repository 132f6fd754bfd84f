#include "trib/nn/sequential.h"

#include <map>

#include "trib/engine/graph.h"

namespace trib::nn {

Sequential& Sequential::add(LayerPtr layer) {
  TRIB_CHECK(layer != nullptr, InvalidArgument, "Sequential::add got a null layer");
  if (layer->name().empty()) layer->set_name(fmt::format("{}_{}", layer->kind(), layers_.size()));
  for (const LayerPtr& l : layers_)
    TRIB_CHECK(l->name() != layer->name(), InvalidArgument, "two layers are named '{}'", l->name());
  layers_.push_back(std::move(layer));
  return *this;
}

Value Sequential::operator()(ModelBuilder& mb, Value x) {
  for (const LayerPtr& l : layers_) x = (*l)(mb, x);
  return x;
}

std::string Sequential::summary(const Shape& input_shape) const {
  Graph g;
  ModelBuilder mb(g, false);
  Value x = g.placeholder("input", {DType::f32, input_shape});
  std::string out = fmt::format("{:<16} {:<20} {:>12}\n", "layer", "output", "parameters");
  std::int64_t total = 0;
  std::size_t seen = 0;
  for (const LayerPtr& l : layers_) {
    x = (*l)(mb, x);
    std::int64_t count = 0;
    for (; seen < mb.parameters().size(); ++seen)
      if (mb.parameters()[seen].trainable) count += mb.parameters()[seen].shape.numel();
    total += count;
    out += fmt::format("{:<16} {:<20} {:>12}\n", l->name(), g.spec(x).shape.to_string(), count);
  }
  out += fmt::format("{:<16} {:<20} {:>12}\n", "total", "", total);
  return out;
}

}  // namespace trib::nn
