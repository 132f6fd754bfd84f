#include "trib/nn/initializer.h"

#include <cmath>

namespace trib::nn {
namespace {

struct Fans {
  double in = 1, out = 1;
};

Fans fans(const Shape& s) {
  if (s.rank() == 0) return {};
  if (s.rank() == 1) return {double(s[0]), double(s[0])};
  if (s.rank() == 2) return {double(s[0]), double(s[1])};
  // [O, C, KH, KW...]: each output sees C*KH*KW inputs.
  double field = 1;
  for (int i = 2; i < s.rank(); ++i) field *= double(s[i]);
  return {double(s[1]) * field, double(s[0]) * field};
}

}  // namespace

Initializer Initializer::parse(const std::string& name) {
  if (name == "zeros") return zeros();
  if (name == "ones") return constant(1.0f);
  if (name == "glorot_uniform" || name == "xavier_uniform") return glorot_uniform();
  if (name == "glorot_normal" || name == "xavier_normal") return glorot_normal();
  if (name == "he_uniform" || name == "kaiming_uniform") return he_uniform();
  if (name == "he_normal" || name == "kaiming_normal") return he_normal();
  throw InvalidArgument(fmt::format(
      "unknown initializer '{}': expected zeros, ones, glorot_uniform, glorot_normal, "
      "he_uniform or he_normal",
      name));
}

std::string Initializer::to_string() const {
  switch (kind) {
    case Kind::zeros: return "zeros";
    case Kind::constant: return fmt::format("constant({})", value);
    case Kind::glorot_uniform: return "glorot_uniform";
    case Kind::glorot_normal: return "glorot_normal";
    case Kind::he_uniform: return "he_uniform";
    case Kind::he_normal: return "he_normal";
  }
  return "?";
}

Tensor Initializer::make(const Shape& shape, Rng& rng) const {
  Tensor t = Tensor::empty(DType::f32, shape);
  auto v = t.span<float>();
  Fans f = fans(shape);
  switch (kind) {
    case Kind::zeros: t.fill(0.0f); break;
    case Kind::constant: t.fill(value); break;
    case Kind::glorot_uniform: {
      float limit = static_cast<float>(std::sqrt(6.0 / (f.in + f.out)));
      for (float& x : v) x = rng.uniform(-limit, limit);
      break;
    }
    case Kind::glorot_normal: {
      float sd = static_cast<float>(std::sqrt(2.0 / (f.in + f.out)));
      for (float& x : v) x = sd * rng.normal();
      break;
    }
    case Kind::he_uniform: {
      float limit = static_cast<float>(std::sqrt(6.0 / f.in));
      for (float& x : v) x = rng.uniform(-limit, limit);
      break;
    }
    case Kind::he_normal: {
      float sd = static_cast<float>(std::sqrt(2.0 / f.in));
      for (float& x : v) x = sd * rng.normal();
      break;
    }
  }
  return t;
}

}  // namespace trib::nn
