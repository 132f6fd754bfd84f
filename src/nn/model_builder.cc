#include "trib/nn/model_builder.h"

namespace trib::nn {

Value ModelBuilder::parameter(const std::string& name, const Shape& shape, Initializer init,
                              float l2, bool trainable) {
  for (const Parameter& p : params_) {
    if (p.name != name) continue;
    TRIB_CHECK(p.shape == shape, ShapeError,
               "parameter '{}' is declared twice with different shapes: {} and {}", name,
               p.shape.to_string(), shape.to_string());
    return p.value;
  }
  Value v = graph_.variable(name, {DType::f32, shape});
  params_.push_back({name, shape, init, l2, trainable, v});
  return v;
}

std::vector<Parameter> ModelBuilder::trainable_parameters() const {
  std::vector<Parameter> out;
  for (const Parameter& p : params_)
    if (p.trainable) out.push_back(p);
  return out;
}

}  // namespace trib::nn
