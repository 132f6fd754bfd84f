// Embedding: rows of a trainable table, looked up by integer ids.
#pragma once

#include <cstdint>

#include "trib/nn/layer.h"

namespace trib::nn {

class Embedding : public Layer {
 public:
  Embedding(std::int64_t vocabulary, std::int64_t dim, std::string name = "")
      : Layer(std::move(name)), vocabulary_(vocabulary), dim_(dim) {}
  Value operator()(ModelBuilder& mb, Value ids) override;
  std::string kind() const override { return "embedding"; }

 private:
  std::int64_t vocabulary_, dim_;
};

}  // namespace trib::nn
