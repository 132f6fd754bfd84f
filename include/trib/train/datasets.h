// The training and test datasets a job's data section describes.
#pragma once

#include <memory>

#include "trib/config/job_config.h"
#include "trib/data/dataset.h"

namespace trib::train {

struct Datasets {
  std::shared_ptr<const data::Dataset> train;
  std::shared_ptr<const data::Dataset> test;
};

// Loads both splits, checking labels against the class count and that an example's size
// matches the model's input. Throws with one line naming the file and the problem.
Datasets load_datasets(const config::DataConfig& data, const config::ModelConfig& model);

// The first `count` examples of another dataset (all of them when it has fewer).
class SubsetDataset final : public data::Dataset {
 public:
  SubsetDataset(std::shared_ptr<const data::Dataset> base, std::int64_t count);
  std::int64_t size() const override { return count_; }
  data::Batch gather(std::span<const std::int64_t> indices) const override;

 private:
  std::shared_ptr<const data::Dataset> base_;
  std::int64_t count_;
};

}  // namespace trib::train
