#include <unistd.h>

#include <cstdlib>

#include "trib/engine/context.h"

namespace trib {

bool use_passive_openmp_waits(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return true;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return false;
  execv("/proc/self/exe", argv);
  return false;  // execv returns only on failure
}

}  // namespace trib
