// Building an optimizer from a small options struct, as read from a config file or flags.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trib/optim/optimizer.h"

namespace trib {

struct OptimizerConfig {
  // One of optimizer_names(). "sgd" with momentum > 0 is the momentum optimizer, as in PyTorch.
  std::string name = "sgd";
  // No learning rate here: optimizers take the rate per call, from the schedule
  // (ScheduleConfig::base_lr, which a job file sets as optimizer.lr).
  // Unset fields take the chosen optimizer's own default (momentum 0.9 for "momentum", 0 for
  // "rmsprop"; eps 1e-10 for Adagrad, 1e-8 otherwise; weight decay 0.01 for AdamW, 0 otherwise).
  std::optional<float> momentum = std::nullopt;
  bool nesterov = false;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  std::optional<float> eps = std::nullopt;
  std::optional<float> weight_decay = std::nullopt;
  float alpha = 0.99f;                // rmsprop
  bool centered = false;              // rmsprop
  float initial_accumulator = 0.0f;  // adagrad
};

// The names make_optimizer accepts.
std::vector<std::string> optimizer_names();

// Throws InvalidArgument naming an unknown optimizer and listing the valid names, or naming a
// hyperparameter out of its range.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config);

}  // namespace trib
