// Trains an MLP on Fashion-MNIST with the C++ API: the model, the data pipeline, gradients
// and an optimizer, in about twenty lines. Usage: train_mlp [EPOCHS [STEPS_PER_EPOCH]] (3 epochs
// of every batch by default).
#include <cstdio>
#include <cstdlib>

#include "trib/data/idx.h"
#include "trib/data/pipeline.h"
#include "trib/nn/layers.h"
#include "trib/nn/sequential.h"
#include "trib/optim/optimizer_config.h"
#include "trib/train/evaluator.h"
#include "trib/update/local_update.h"

int main(int argc, char** argv) {
  using namespace trib;
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::int64_t steps = argc > 2 ? std::atoll(argv[2]) : -1;  // -1: the whole epoch
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  auto train = std::make_shared<data::InMemoryDataset>(data::load_idx_pair(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz", {.num_classes = 10, .flatten = true}));
  auto test = data::load_idx_pair(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz", {.num_classes = 10, .flatten = true});

  auto model = std::make_shared<nn::Sequential>();
  model->add<nn::Dense>(nn::DenseOptions{.units = 256, .activation = nn::Activation::relu});
  model->add<nn::Dense>(nn::DenseOptions{.units = 10});

  EngineContext engine({.intra_op_threads = 1});
  train::ModelSpec spec{model, Shape{784}, 10, /*seed=*/1};
  train::ModelGraph graph(spec, /*batch=*/128, /*training=*/true, engine);
  VariableStore vars;
  train::initialize_parameters(graph.parameters(), spec.seed, vars);
  std::vector<std::string> names;
  for (const auto& p : graph.trainable_parameters()) names.push_back(p.name);
  update::LocalUpdate update({names, make_optimizer({.name = "adam"}), std::make_shared<ConstantSchedule>(1e-3f)});

  data::Pipeline batches = data::Pipeline::from(train).shuffle(1).batch(128, true).prefetch(2).build();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    std::int64_t step = 0;
    while (step != steps) {
      auto b = batches.next();
      if (!b) break;
      train::StepResult r = graph.run(b->features(), b->labels(), vars, step);
      update.apply(step++, r.grads, vars);
    }
    train::EvalResult e = train::Evaluator(spec, 1000, engine).run(test, vars);
    std::printf("epoch %d: test accuracy %.4f, loss %.4f\n", epoch, e.accuracy, e.loss);
  }
}
