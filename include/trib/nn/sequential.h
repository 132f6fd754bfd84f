// Layers applied one after another. Unnamed layers get "<kind>_<index>" names, which become
// the prefixes of their parameters ("dense_1/w").
#pragma once

#include <vector>

#include "trib/nn/layer.h"

namespace trib::nn {

class Sequential : public Layer {
 public:
  explicit Sequential(std::string name = "") : Layer(std::move(name)) {}
  Sequential& add(LayerPtr layer);
  template <typename L, typename... Args>
  Sequential& add(Args&&... args) {
    return add(std::make_shared<L>(std::forward<Args>(args)...));
  }
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "sequential"; }
  const std::vector<LayerPtr>& layers() const { return layers_; }

  // A table of layers, output shapes and parameter counts for an input of this shape.
  std::string summary(const Shape& input_shape) const;

 private:
  std::vector<LayerPtr> layers_;
};

}  // namespace trib::nn
