// The base job of the sweep tests: a small MLP on a few hundred Fashion-MNIST images, so that
// a trial is tens of steps and a fraction of a second.
#pragma once

#include <string>

namespace trib::testing {

inline const std::string kFashionMnist = "/usr/share/datasets/fashion-mnist/";

// `units` and `batch` make a trial slower where a test must act while one runs.
inline std::string tiny_job_yaml(int eval_every, int units = 32, int batch = 32) {
  const std::string& d = kFashionMnist;
  return "name: tiny\n"
         "model:\n  input: [1, 28, 28]\n  classes: 10\n  layers:\n"
         "    - {type: flatten}\n    - {type: dense, units: " + std::to_string(units) + ", activation: relu}\n"
         "    - {type: dropout, rate: 0.1}\n    - {type: dense, units: 10}\n"
         "data:\n  format: idx\n  train_subset: 300\n  test_subset: 200\n"
         "  train: {images: " + d + "train-images-idx3-ubyte.gz, labels: " + d + "train-labels-idx1-ubyte.gz}\n"
         "  test: {images: " + d + "t10k-images-idx3-ubyte.gz, labels: " + d + "t10k-labels-idx1-ubyte.gz}\n"
         "optimizer: {name: adam, lr: 0.001}\n"
         "training: {batch: " + std::to_string(batch) + ", eval_every: " + std::to_string(eval_every) + ", train_metrics: false}\n";
}

}  // namespace trib::testing
