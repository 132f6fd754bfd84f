#include "trib/train/update_strategy.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "trib/optim/clip.h"

namespace trib::train {

namespace {

// Whether any of v[0, n) is NaN or Inf: exactly the floats whose exponent bits are all ones.
// Integer tests OR-ed together need no float reassociation, and the vector type makes the
// compiler use SIMD registers whatever its cost model at -O2. (One float accumulator had
// made this a chain of dependent adds, a quarter of an MLP step.) Ints is as wide as the
// registers: 4 ints for the baseline's 128 bits, 16 for AVX-512; the compiler lowers vectors
// wider than the target's registers poorly, so each width gets its own build.
typedef std::int32_t Int32x4 __attribute__((vector_size(16)));
typedef std::int32_t Int32x16 __attribute__((vector_size(64)));

template <typename Ints>
[[gnu::always_inline]] inline bool scan_non_finite(const float* v, std::int64_t n) {
  constexpr int Lanes = sizeof(Ints) / sizeof(std::int32_t);
  constexpr std::int32_t kExponent = 0x7f800000;
  Ints bad0{}, bad1{};  // lanes all ones where a non-finite value was seen
  std::int64_t i = 0;
  for (; i + 2 * Lanes <= n; i += 2 * Lanes) {
    Ints a, b;
    std::memcpy(&a, v + i, sizeof a);
    std::memcpy(&b, v + i + Lanes, sizeof b);
    bad0 |= (a & kExponent) == kExponent;
    bad1 |= (b & kExponent) == kExponent;
  }
  bad0 |= bad1;
  std::int32_t any = 0;
  for (int j = 0; j < Lanes; ++j) any |= bad0[j];
  for (; i < n; ++i) any |= (std::bit_cast<std::int32_t>(v[i]) & kExponent) == kExponent;
  return any != 0;
}

[[gnu::target("avx512f")]] bool any_non_finite_avx512(const float* v, std::int64_t n) {
  return scan_non_finite<Int32x16>(v, n);
}

bool any_non_finite(const float* v, std::int64_t n) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512 ? any_non_finite_avx512(v, n) : scan_non_finite<Int32x4>(v, n);
}

}  // namespace

bool all_finite(const std::vector<GradTensor>& grads) {
  for (const GradTensor& g : grads)
    if (any_non_finite(g.values.data<float>(), g.values.numel())) return false;
  return true;
}

LocalUpdate::LocalUpdate(LocalUpdateOptions options) : o_(std::move(options)) {
  TRIB_CHECK(o_.optimizer && o_.schedule, InvalidArgument, "LocalUpdate needs an optimizer and a schedule");
}

bool LocalUpdate::apply(std::int64_t step, std::vector<GradTensor>& grads, VariableStore& vars) {
  TRIB_CHECK(grads.size() == o_.parameters.size(), InvalidArgument,
             "{} gradients for {} parameters", grads.size(), o_.parameters.size());
  if (!all_finite(grads)) {
    TRIB_CHECK(++consecutive_skips_ < o_.max_consecutive_skips, Error,
               "{} steps in a row had NaN or Inf gradients (last at step {}); stopping. Lower the "
               "learning rate or enable training.clip_norm",
               consecutive_skips_, step);
    return false;
  }
  consecutive_skips_ = 0;
  if (o_.clip_norm > 0) {
    std::vector<Tensor> dense;
    for (const GradTensor& g : grads) dense.push_back(g.values);
    clip_by_global_norm(dense, o_.clip_norm);
  }
  const float lr = o_.schedule->lr(step);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    Tensor& param = vars.get(o_.parameters[i]);
    if (grads[i].sparse())
      o_.optimizer->apply_sparse(o_.parameters[i], param, grads[i].values, grads[i].indices, slots_, lr);
    else
      o_.optimizer->apply(o_.parameters[i], param, grads[i].values, slots_, lr);
  }
  return true;
}

std::int64_t UpdateStrategy::start(VariableStore& vars, const Checkpoint* checkpoint) {
  if (checkpoint == nullptr) return 0;
  for (const std::string& name : vars.names()) {
    TRIB_CHECK(checkpoint->contains(name), NotFound, "checkpoint {} has no tensor '{}' that the model needs",
               checkpoint->dir().string(), name);
    Tensor& v = vars.get(name);
    const Tensor& t = checkpoint->tensor(name);
    TRIB_CHECK(t.dtype() == v.dtype() && t.shape() == v.shape(), ShapeError,
               "checkpoint {}: tensor '{}' is {} but the model needs {}", checkpoint->dir().string(), name,
               t.spec_string(), v.spec_string());
    vars.set(name, t.clone());
  }
  restore_state(checkpoint->tensors_with_prefix("slot/"));
  return checkpoint->step();
}

void UpdateStrategy::save(CheckpointWriter& writer, const VariableStore& vars) {
  TensorMap model;
  for (const std::string& name : vars.names()) model[name] = vars.get(name);
  writer.add_shard("model", model);
  TensorMap slots = state();
  if (!slots.empty()) writer.add_shard("optimizer", slots);
}

void LocalUpdate::restore_state(const std::map<std::string, Tensor>& tensors) {
  slots_.clear();
  slots_.load_tensors(tensors);
}

}  // namespace trib::train
