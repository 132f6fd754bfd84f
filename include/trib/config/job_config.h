// A training job as described by a YAML file: model, data, optimizer, schedule, training
// loop and threads (and, from later sections, the cluster). Loading is strict: an unknown key
// is an error naming it and suggesting the nearest valid one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trib/nn/layers.h"
#include "trib/nn/sequential.h"
#include "trib/optim/optimizer_config.h"
#include "trib/optim/schedule_config.h"

namespace trib::config {

struct LayerConfig {
  std::string type;  // dense, conv2d, max_pool2d, avg_pool2d, flatten, dropout, batch_norm,
                     // embedding, activation
  std::string name;
  nn::DenseOptions dense;
  nn::Conv2DOptions conv;
  int pool_size = 2, pool_stride = 0;
  float rate = 0.0f;                 // dropout
  float momentum = 0.9f, epsilon = 1e-5f;  // batch_norm
  std::int64_t vocabulary = 0, dim = 0;    // embedding
  nn::Activation activation = nn::Activation::none;  // activation layer
};

struct ModelConfig {
  std::vector<std::int64_t> input;  // one example's shape, e.g. [1, 28, 28]
  std::int64_t classes = 0;
  std::vector<LayerConfig> layers;
};

struct DataSplitConfig {
  std::string images, labels;  // idx
  std::string path;            // csv
};

struct DataConfig {
  std::string format = "idx";  // idx | csv
  DataSplitConfig train, test;
  std::string label_column = "label";  // csv
  bool header = true;                  // csv
  int num_classes = 0;                 // label range check (defaults to model.classes)
  float scale = 1.0f / 255.0f;         // idx: pixels are multiplied by this
  bool shuffle = true;
  int prefetch = 2;
  std::int64_t train_subset = 0;  // use only the first N training examples (0: all)
  std::int64_t test_subset = 0;
};

struct TrainingConfig {
  double epochs = 1;             // used when steps is 0
  std::int64_t steps = 0;
  std::int64_t batch = 64;
  std::int64_t eval_batch = 1000;
  std::int64_t eval_every = 0;   // steps between evaluations; 0: once per epoch
  std::int64_t checkpoint_every = 0;  // steps; 0: at every evaluation
  int keep_checkpoints = 3;
  std::uint64_t seed = 1;
  double clip_norm = 0;          // gradient clipping by global norm; 0: off
  bool train_metrics = true;     // evaluate on the training split too (on up to 10k examples)
};

struct ThreadsConfig {
  int intra = 0;  // 0: one per core
  int inter = 1;
};

struct JobConfig {
  std::string name = "job";
  std::string source_file;
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  TrainingConfig training;
  ThreadsConfig threads;
  std::string resolved_yaml;  // the configuration after overrides, for config.yaml
};

// Reads and validates a job file, applying "key.path=value" overrides first. Throws
// InvalidArgument (bad key or value) or NotFound (missing file), naming the file and key.
JobConfig load_job_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from YAML text (for tests); `origin` names it in errors.
JobConfig parse_job_config(const std::string& yaml_text, const std::string& origin,
                           const std::vector<std::string>& overrides = {});

// The model as layers; checks every layer's settings.
std::shared_ptr<nn::Sequential> build_model(const ModelConfig& model);

}  // namespace trib::config
