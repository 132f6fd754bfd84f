// The built-in layers. Images are NCHW; Dense takes [N, features].
#pragma once

#include <cstdint>

#include "trib/nn/layer.h"

namespace trib::nn {

struct DenseOptions {
  std::int64_t units = 0;
  Activation activation = Activation::none;
  Initializer kernel_init = Initializer::glorot_uniform();
  Initializer bias_init = Initializer::zeros();
  bool use_bias = true;
  float l2 = 0.0f;
};

class Dense : public Layer {
 public:
  explicit Dense(DenseOptions o, std::string name = "") : Layer(std::move(name)), o_(o) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "dense"; }

 private:
  DenseOptions o_;
};

struct Conv2DOptions {
  std::int64_t filters = 0;
  int kernel = 3;
  int stride = 1;
  int padding = -1;  // -1: "same" (kernel / 2); otherwise explicit zero padding
  Activation activation = Activation::none;
  Initializer kernel_init = Initializer::he_uniform();
  Initializer bias_init = Initializer::zeros();
  bool use_bias = true;
  float l2 = 0.0f;
};

class Conv2D : public Layer {
 public:
  explicit Conv2D(Conv2DOptions o, std::string name = "") : Layer(std::move(name)), o_(o) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "conv2d"; }

 private:
  Conv2DOptions o_;
};

class MaxPool2D : public Layer {
 public:
  explicit MaxPool2D(int size = 2, int stride = 0, std::string name = "")
      : Layer(std::move(name)), size_(size), stride_(stride ? stride : size) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "max_pool2d"; }

 private:
  int size_, stride_;
};

class AvgPool2D : public Layer {
 public:
  explicit AvgPool2D(int size = 2, int stride = 0, std::string name = "")
      : Layer(std::move(name)), size_(size), stride_(stride ? stride : size) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "avg_pool2d"; }

 private:
  int size_, stride_;
};

class Flatten : public Layer {
 public:
  explicit Flatten(std::string name = "") : Layer(std::move(name)) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "flatten"; }
};

class ActivationLayer : public Layer {
 public:
  explicit ActivationLayer(Activation a, std::string name = "") : Layer(std::move(name)), a_(a) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "activation"; }

 private:
  Activation a_;
};

class Dropout : public Layer {
 public:
  explicit Dropout(float rate, std::string name = "");
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "dropout"; }

 private:
  float rate_;
};

class BatchNorm : public Layer {
 public:
  explicit BatchNorm(float momentum = 0.9f, float epsilon = 1e-5f, std::string name = "")
      : Layer(std::move(name)), momentum_(momentum), epsilon_(epsilon) {}
  Value operator()(ModelBuilder& mb, Value x) override;
  std::string kind() const override { return "batch_norm"; }

 private:
  float momentum_, epsilon_;
};

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
