// The optimizer interface. An optimizer is stateless configuration (hyperparameters); all
// per-variable state lives in a SlotStore the caller passes in, and the learning rate comes
// with every call (from a Schedule). So one optimizer object can serve every variable, and
// a parameter server can run the update for exactly the variables it owns.
//
// Sparse updates (embedding rows) are lazy: only the touched rows of the variable and of its
// slots change. For momentum, Adam and RMSProp this means an untouched row's moving averages
// do not decay while it is untouched (TensorFlow's LazyAdam semantics). Step counts (Adam's
// bias correction) are per variable and advance once per apply or apply_sparse call (a sparse
// call with no indices changes nothing).
//
// Threads: updates of different variables may run concurrently with one optimizer and one
// SlotStore; updates of the same variable must not. After a variable's first update, an update
// allocates nothing (sparse scratch memory grows only for a larger batch of rows).
//
// Weight decay: every optimizer but AdamW treats weight_decay as L2 regularisation, adding
// weight_decay * param to the gradient before the update (PyTorch's semantics); AdamW decays
// the parameter directly, decoupled from the adaptive step.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "trib/core/tensor.h"
#include "trib/optim/slot_store.h"

namespace trib {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string_view name() const = 0;

  // param -= update(grad). param and grad are f32 of the same shape. Throws InvalidArgument
  // naming the variable otherwise.
  void apply(const std::string& var, Tensor& param, const Tensor& grad, SlotStore& slots, float lr) const;

  // Updates only the rows of `param` (rank >= 1) named by `indices` (i32 or i64, shape [n]);
  // `rows` (f32, shape [n, param.shape[1:]...]) holds one gradient row per index. Duplicate
  // indices are summed before the update, as a dense gradient would sum them. Throws
  // InvalidArgument naming the variable for a bad shape, dtype or out-of-range index.
  void apply_sparse(const std::string& var, Tensor& param, const Tensor& rows, const Tensor& indices,
                    SlotStore& slots, float lr) const;

 protected:
  // Applies the update to segments of the variable: segment i is the `len` contiguous
  // elements starting at element offsets[i] of the variable (and of each slot, which has the
  // variable's shape), and its gradient is grad[i*len, (i+1)*len). A dense update is one
  // segment covering the whole variable; a sparse one is one segment per distinct row, rows
  // ascending. Called once per apply call, so per-call work (step counts, slot lookups)
  // happens here, outside the element loops.
  virtual void update(const std::string& var, Tensor& param, std::span<const std::int64_t> offsets,
                      const float* grad, std::int64_t len, SlotStore& slots, float lr) const = 0;
};

}  // namespace trib
