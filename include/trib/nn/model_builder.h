// What layers build into: the graph, plus the parameters they declare and the state updates
// (batch-norm running statistics) the trainer applies after each step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trib/engine/graph.h"
#include "trib/nn/initializer.h"

namespace trib::nn {

struct Parameter {
  std::string name;  // "dense_0/w": the variable's name in the store and in checkpoints
  Shape shape;
  Initializer init;
  float l2 = 0.0f;         // L2 penalty coefficient, added to the loss
  bool trainable = true;   // false for running statistics
  Value value;             // the graph node reading it
};

// running = momentum * running + (1 - momentum) * batch, after each training step.
struct StateUpdate {
  std::string variable;
  Value batch_value;
  float momentum;
};

class ModelBuilder {
 public:
  ModelBuilder(Graph& graph, bool training, std::uint64_t seed = 0)
      : graph_(graph), training_(training), seed_(seed) {}

  Graph& graph() { return graph_; }
  bool training() const { return training_; }

  // Declares a parameter and returns the node reading it. Declaring the same name again
  // (a layer called twice) returns the same node; a different shape is an error.
  Value parameter(const std::string& name, const Shape& shape, Initializer init, float l2 = 0.0f,
                  bool trainable = true);
  const std::vector<Parameter>& parameters() const { return params_; }
  std::vector<Parameter> trainable_parameters() const;

  void add_state_update(StateUpdate u) { updates_.push_back(std::move(u)); }
  const std::vector<StateUpdate>& state_updates() const { return updates_; }

  // A distinct seed per random layer (dropout), derived from the model seed.
  std::uint64_t next_seed() { return seed_ * 1000003ULL + ++seeds_drawn_; }

 private:
  Graph& graph_;
  bool training_;
  std::uint64_t seed_;
  std::uint64_t seeds_drawn_ = 0;
  std::vector<Parameter> params_;
  std::vector<StateUpdate> updates_;
};

}  // namespace trib::nn
