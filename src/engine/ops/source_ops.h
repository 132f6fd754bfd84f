// The graph's sources: the executor fills their outputs itself (feeds, the variable store,
// the stored constant), so their kernels are never called.
#pragma once

#include "trib/engine/op.h"

namespace trib {

class PlaceholderOp final : public Op {
 public:
  std::string_view name() const override { return "placeholder"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec>) const override { return {}; }
  void compute(KernelContext&) const override {}
  Kind kind() const override { return Kind::placeholder; }
  std::vector<Gradient> gradient(GradContext&) const override { return {}; }
};

class VariableOp final : public Op {
 public:
  std::string_view name() const override { return "variable"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec>) const override { return {}; }
  void compute(KernelContext&) const override {}
  Kind kind() const override { return Kind::variable; }
  std::vector<Gradient> gradient(GradContext&) const override { return {}; }
};

class ConstantOp final : public Op {
 public:
  explicit ConstantOp(Tensor value) : value_(std::move(value)) {}
  std::string_view name() const override { return "constant"; }
  std::vector<TensorSpec> infer(std::span<const TensorSpec>) const override { return {}; }
  void compute(KernelContext&) const override {}
  Kind kind() const override { return Kind::constant; }
  std::vector<Gradient> gradient(GradContext&) const override { return {}; }
  const Tensor& value() const { return value_; }

 private:
  Tensor value_;
};

}  // namespace trib
