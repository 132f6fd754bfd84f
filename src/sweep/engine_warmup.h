// The engine's one-time set-up, done once in the sweep before it forks its trials.
//
// oneDNN sets up its GEMM kernels (generated code, CPU dispatch) once per process, on the first
// multiplication, whatever the shapes: about 0.05 s of CPU here (the first training step of a
// forked trial took 0.07 to 0.12 s, the next 0.0015). Done in the sweep, every forked trial
// inherits it (copy-on-write) instead of repeating it, grid and ASHA alike; it changes no
// result (the kernels are the same ones). Profile: docs/sweeps.md.
#pragma once

#include "trib/config/job_config.h"

namespace trib::sweep {

// One training step and one evaluation batch of `job`'s model (its batch sizes, zeros), on one
// thread (no OpenMP worker threads exist yet when the trials are forked). A model that cannot
// be built is left for the trials to report: nothing is thrown.
void warm_engine(const config::JobConfig& job);

}  // namespace trib::sweep
