// Helpers shared by the data tests: temporary files, a dataset whose examples say which they
// are, and an unbounded stream source.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trib/data/batch_stream.h"
#include "trib/data/example_source.h"
#include "trib/data/in_memory_dataset.h"

namespace trib::data::testing {

// A fresh directory, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "trib_data_XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

// Example i has features {i, -i} and label i % 7, so a batch tells which examples it holds.
inline std::shared_ptr<InMemoryDataset> counting_dataset(std::int64_t n) {
  std::vector<float> features;
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) {
    features.push_back(static_cast<float>(i));
    features.push_back(-static_cast<float>(i));
    labels.push_back(static_cast<std::int32_t>(i % 7));
  }
  return std::make_shared<InMemoryDataset>(
      InMemoryDataset::from_floats(Shape{2}, std::move(features), std::move(labels)));
}

// The example ids (first feature) of a batch from counting_dataset or CountingStream.
inline std::vector<std::int64_t> ids(const Batch& batch) {
  std::vector<std::int64_t> out;
  const Tensor& f = batch.features();
  const float* x = f.data<float>();
  for (std::int64_t r = 0; r < f.shape()[0]; ++r) out.push_back(static_cast<std::int64_t>(x[r * 2]));
  return out;
}

// Every batch of a stream up to its next end of epoch, as id lists.
inline std::vector<std::vector<std::int64_t>> drain_epoch(BatchStream& stream) {
  std::vector<std::vector<std::int64_t>> batches;
  while (auto batch = stream.next()) batches.push_back(ids(*batch));
  return batches;
}

// An unbounded, seekable stream of examples 0, 1, 2, ... shaped like counting_dataset's, as
// a Kafka partition would be: its position is an offset.
class CountingStream final : public ExampleSource {
 public:
  std::optional<Batch> next(std::int64_t max_rows) override {
    std::vector<float> features;
    std::vector<std::int32_t> labels;
    // Uneven chunk sizes, as a real stream delivers.
    const std::int64_t rows = std::min<std::int64_t>(max_rows, 1 + offset_ % 3);
    for (std::int64_t r = 0; r < rows; ++r, ++offset_) {
      features.push_back(static_cast<float>(offset_));
      features.push_back(-static_cast<float>(offset_));
      labels.push_back(static_cast<std::int32_t>(offset_ % 7));
    }
    return Batch(Tensor::from_vector(Shape{rows, 2}, features), Tensor::from_vector(Shape{rows}, labels));
  }
  DataPosition position() const override {
    DataPosition p;
    p.set_int("stream.offset", offset_);
    return p;
  }
  void seek(const DataPosition& p) override { offset_ = p.get_int("stream.offset"); }

 private:
  std::int64_t offset_ = 0;
};

}  // namespace trib::data::testing
