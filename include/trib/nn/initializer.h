// How a parameter gets its first value. Fan-in/fan-out follow the usual conventions: dense
// weights [in, out]; convolution weights [O, C, KH, KW] with receptive field KH*KW.
#pragma once

#include <string>

#include "trib/core/random.h"
#include "trib/core/tensor.h"

namespace trib::nn {

struct Initializer {
  enum class Kind { zeros, constant, glorot_uniform, glorot_normal, he_uniform, he_normal };
  Kind kind = Kind::glorot_uniform;
  float value = 0.0f;  // for constant

  static Initializer zeros() { return {Kind::zeros}; }
  static Initializer constant(float v) { return {Kind::constant, v}; }
  static Initializer glorot_uniform() { return {Kind::glorot_uniform}; }
  static Initializer glorot_normal() { return {Kind::glorot_normal}; }
  static Initializer he_uniform() { return {Kind::he_uniform}; }
  static Initializer he_normal() { return {Kind::he_normal}; }

  // Parses "zeros", "ones", "glorot_uniform", "he_normal", ...; throws naming the text.
  static Initializer parse(const std::string& name);
  std::string to_string() const;

  // A tensor of this shape drawn from rng.
  Tensor make(const Shape& shape, Rng& rng) const;
};

}  // namespace trib::nn
