#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trib/optim/adagrad.h"
#include "trib/optim/adam.h"
#include "trib/optim/adamw.h"
#include "trib/optim/momentum.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/rmsprop.h"
#include "trib/optim/sgd.h"

namespace trib {

std::vector<std::string> optimizer_names() { return {"sgd", "momentum", "adam", "adamw", "adagrad", "rmsprop"}; }

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c) {
  const float wd = c.weight_decay.value_or(0.0f);
  if (c.name == "sgd" || c.name == "momentum") {
    const float mu = c.momentum.value_or(c.name == "momentum" ? 0.9f : 0.0f);
    if (mu == 0.0f) {
      TRIB_CHECK(!c.nesterov, InvalidArgument, "optimizer '{}': nesterov needs momentum > 0", c.name);
      return std::make_unique<Sgd>(SgdOptions{.weight_decay = wd});
    }
    return std::make_unique<Momentum>(MomentumOptions{.momentum = mu, .nesterov = c.nesterov, .weight_decay = wd});
  }
  if (c.name == "adam" || c.name == "adamw") {
    AdamOptions o{.beta1 = c.beta1, .beta2 = c.beta2, .eps = c.eps.value_or(1e-8f), .weight_decay = wd};
    if (c.name == "adam") return std::make_unique<Adam>(o);
    o.weight_decay = c.weight_decay.value_or(0.01f);
    return std::make_unique<AdamW>(o);
  }
  if (c.name == "adagrad") {
    return std::make_unique<Adagrad>(AdagradOptions{
        .eps = c.eps.value_or(1e-10f), .initial_accumulator = c.initial_accumulator, .weight_decay = wd});
  }
  if (c.name == "rmsprop") {
    return std::make_unique<RmsProp>(RmsPropOptions{.alpha = c.alpha,
                                                    .eps = c.eps.value_or(1e-8f),
                                                    .momentum = c.momentum.value_or(0.0f),
                                                    .centered = c.centered,
                                                    .weight_decay = wd});
  }
  throw InvalidArgument(fmt::format("unknown optimizer '{}': valid names are {}", c.name,
                                    fmt::join(optimizer_names(), ", ")));
}

}  // namespace trib
