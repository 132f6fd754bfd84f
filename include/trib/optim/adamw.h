// AdamW (Loshchilov & Hutter): Adam with weight decay decoupled from the adaptive update,
//   p *= 1 - lr * weight_decay, then the Adam step on the undecayed gradient.
// In a sparse update only the touched rows decay.
#pragma once

#include "trib/optim/adam.h"

namespace trib {

class AdamW final : public Adam {
 public:
  explicit AdamW(AdamOptions options = {.weight_decay = 0.01f});
  std::string_view name() const override { return "adamw"; }
};

}  // namespace trib
