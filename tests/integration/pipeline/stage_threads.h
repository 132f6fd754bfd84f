// Test support: a pipeline of K stages (times R replicas) as threads in this process, each
// with its own transport, engine, variables and update strategy, as separate processes
// would have; and the single-process reference it must equal.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "trib/collectives/group.h"
#include "trib/collectives/strategy_allreduce.h"
#include "trib/engine/context.h"
#include "trib/net/inproc_transport.h"
#include "trib/nn/dense.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"
#include "trib/pipeline/pipeline_stage.h"
#include "trib/train/model_graph.h"
#include "trib/update/local_update.h"

namespace trib::pipeline::testing {

inline net::ClusterSecret test_secret() { return net::ClusterSecret::from_hex("00112233445566778899aabbccddeeff"); }

inline std::shared_ptr<net::Transport> inproc(const std::shared_ptr<net::InProcHub>& hub, int index,
                                              net::NetOptions options = {}) {
  auto ctx = net::NetContext::create(test_secret(), net::PeerIdentity{"worker", index, ""}, options,
                                     [](std::string_view) {});
  return std::make_shared<net::InProcTransport>(ctx, hub);
}

// A small MLP of `layers` dense layers over inputs of `features`, ending in `classes` logits.
inline std::shared_ptr<nn::Sequential> mlp(int layers, std::int64_t features, std::int64_t hidden, std::int64_t classes,
                                           float l2 = 0) {
  auto seq = std::make_shared<nn::Sequential>();
  for (int i = 0; i < layers; ++i) {
    nn::DenseOptions d;
    d.units = i + 1 == layers ? classes : hidden;
    d.activation = i + 1 == layers ? nn::Activation::none : nn::Activation::tanh;
    d.l2 = l2;
    seq->add(std::make_shared<nn::Dense>(d));
  }
  (void)features;
  return seq;
}

struct Batch {
  Tensor features, labels;
};

inline std::vector<Batch> random_batches(int steps, std::int64_t batch, std::int64_t features, std::int64_t classes,
                                         std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Batch> out;
  for (int s = 0; s < steps; ++s) {
    Batch b{Tensor::empty(DType::f32, Shape{batch, features}), Tensor::empty(DType::i32, Shape{batch})};
    for (std::int64_t i = 0; i < batch * features; ++i) b.features.data<float>()[i] = rng.uniform() * 2 - 1;
    for (std::int64_t i = 0; i < batch; ++i)
      b.labels.data<std::int32_t>()[i] = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes)));
    out.push_back(b);
  }
  return out;
}

// SGD with momentum: its update scales with the gradient (Adam's barely does), so a wrong
// gradient scale cannot pass unnoticed.
inline std::shared_ptr<const Optimizer> momentum_sgd() {
  OptimizerConfig c;
  c.name = "sgd";
  c.momentum = 0.9f;
  return make_optimizer(c);
}

inline std::shared_ptr<const Schedule> constant_lr(float lr) {
  ScheduleConfig c;
  c.base_lr = lr;
  return make_schedule(c);
}

// Ends the test binary if `f` does not finish within `seconds` (a hung pipeline cannot be cancelled).
template <typename F>
auto within(int seconds, F&& f) {
  auto done = std::async(std::launch::async, std::forward<F>(f));
  if (done.wait_for(std::chrono::seconds(seconds)) == std::future_status::timeout) {
    std::fprintf(stderr, "FATAL: a pipeline test did not finish within %d s\n", seconds);
    std::fflush(stderr);
    std::_Exit(3);
  }
  return done.get();
}

}  // namespace trib::pipeline::testing
