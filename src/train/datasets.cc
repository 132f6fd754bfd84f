#include "trib/train/datasets.h"

#include "trib/data/csv.h"
#include "idx_cache.h"

namespace trib::train {

SubsetDataset::SubsetDataset(std::shared_ptr<const data::Dataset> base, std::int64_t count)
    : base_(std::move(base)), count_(std::min(count, base_->size())) {}

data::Batch SubsetDataset::gather(std::span<const std::int64_t> indices) const {
  for (std::int64_t i : indices)
    TRIB_CHECK(i >= 0 && i < count_, InvalidArgument, "example {} is outside a subset of {}", i, count_);
  return base_->gather(indices);
}

namespace {

std::shared_ptr<const data::Dataset> load_split(const config::DataConfig& d,
                                                const config::DataSplitConfig& s,
                                                std::int64_t subset) {
  std::shared_ptr<const data::Dataset> ds;
  if (d.format == "idx") {
    // Bytes stay bytes, widened with the configured scale only when batching.
    IdxCacheOptions o;
    o.dir = !d.cache ? "" : d.cache_dir.empty() ? default_idx_cache_dir() : d.cache_dir;
    o.num_classes = d.num_classes;
    o.byte_scale = d.scale;
    ds = std::make_shared<data::InMemoryDataset>(load_idx_cached(s.images, s.labels, o));
  } else {
    data::CsvOptions o;
    o.header = d.header ? data::CsvOptions::Header::present : data::CsvOptions::Header::absent;
    o.label_name = d.label_column;
    o.num_classes = d.num_classes;
    ds = std::make_shared<data::InMemoryDataset>(data::load_csv(s.path, o));
  }
  if (subset > 0) ds = std::make_shared<SubsetDataset>(ds, subset);
  return ds;
}

}  // namespace

Datasets load_datasets(const config::DataConfig& data, const config::ModelConfig& model) {
  TRIB_CHECK(!data.external(), InvalidArgument,
             "data.format is python: this job's batches come from a Python program (tributary's Model.fit), so "
             "there are no files to read; give the job a data section with files (idx or csv) to train or "
             "evaluate it here");
  Datasets out;
  out.train = load_split(data, data.train, data.train_subset);
  out.test = load_split(data, data.test, data.test_subset);
  Shape input(model.input);
  for (const auto* split : {&out.train, &out.test}) {
    TRIB_CHECK((*split)->size() > 0, InvalidArgument, "a dataset split is empty");
    Shape example = (*split)->get(0).features().shape();
    std::int64_t per_example = example.numel() / std::max<std::int64_t>(1, example[0]);
    TRIB_CHECK(per_example == input.numel(), ShapeError,
               "data examples have {} values each but model.input {} needs {}", per_example,
               input.to_string(), input.numel());
  }
  return out;
}

}  // namespace trib::train
