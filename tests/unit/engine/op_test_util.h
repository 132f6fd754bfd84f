// The checks every op must pass: its fast kernel agrees with its reference kernel, and its
// gradient agrees with central finite differences.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "trib/core/random.h"
#include "trib/core/tensor.h"
#include "trib/engine/context.h"
#include "trib/engine/graph.h"

namespace trib::testing {

// Builds the op under test from placeholders holding the inputs; returns its output.
using OpBuilder = std::function<Value(Graph&, std::span<const Value>)>;

Tensor random_tensor(const Shape& shape, Rng& rng, float lo = -1.0f, float hi = 1.0f);
Tensor random_ints(const Shape& shape, Rng& rng, std::int64_t below, DType dtype = DType::i32);

// One engine context for all tests in a binary (2 threads for every node, to exercise the
// parallel paths).
const EngineContext& test_engine();

// Runs the op's output through fast and reference kernels and expects every element to
// agree within `tol` (absolute plus relative). Output `index` of the built node is compared.
void expect_fast_matches_reference(const OpBuilder& build, const std::vector<Tensor>& inputs,
                                   float tol = 1e-4f, bool training = true);

struct GradCheckOptions {
  float epsilon = 1e-2f;       // finite-difference step
  float tolerance = 2e-2f;     // on |analytic - numeric| / max(1, |numeric|)
  int max_elements = 48;       // elements checked per input (sampled evenly)
  bool training = true;
};

// Checks d(sum(w * op(inputs)))/d(input) for each input in `wrt` (indices into inputs)
// against central differences, with w random and fixed. Both kernel kinds are checked.
void expect_gradients_match_numeric(const OpBuilder& build, const std::vector<Tensor>& inputs,
                                    const std::vector<int>& wrt, GradCheckOptions opts = {});

// Runs the built op once (fast kernels) and returns its output.
Tensor run_op(const OpBuilder& build, const std::vector<Tensor>& inputs, bool training = true,
              bool reference = false);

}  // namespace trib::testing
