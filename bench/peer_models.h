// The models and batches of ../shared/peers/torch_peer.py, built with trib's layers, so that
// a benchmark compares like with like.
#pragma once

#include <memory>
#include <string>

#include "trib/nn/layers.h"
#include "trib/nn/sequential.h"

namespace trib::bench {

// "mlp": 784-256-256-10; "cnn" (anything else): two 5x5 convolutions (32, 64) with 2x2 max
// pooling, then dense 1024 and 10.
inline std::shared_ptr<nn::Sequential> build_peer_model(const std::string& name) {
  auto m = std::make_shared<nn::Sequential>();
  const auto relu = nn::Activation::relu;
  if (name == "mlp") {
    m->add<nn::Flatten>();
    m->add<nn::Dense>(nn::DenseOptions{.units = 256, .activation = relu});
    m->add<nn::Dense>(nn::DenseOptions{.units = 256, .activation = relu});
    m->add<nn::Dense>(nn::DenseOptions{.units = 10});
  } else {
    m->add<nn::Conv2D>(nn::Conv2DOptions{.filters = 32, .kernel = 5, .padding = 2, .activation = relu});
    m->add<nn::MaxPool2D>(2);
    m->add<nn::Conv2D>(nn::Conv2DOptions{.filters = 64, .kernel = 5, .padding = 2, .activation = relu});
    m->add<nn::MaxPool2D>(2);
    m->add<nn::Flatten>();
    m->add<nn::Dense>(nn::DenseOptions{.units = 1024, .activation = relu});
    m->add<nn::Dense>(nn::DenseOptions{.units = 10});
  }
  return m;
}

}  // namespace trib::bench
