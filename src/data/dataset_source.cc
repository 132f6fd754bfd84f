#include "trib/data/dataset_source.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "trib/core/error.h"
#include "data/permutation.h"

namespace trib::data {
namespace {

// The settings a position is only valid under, as (key, value) pairs stored beside it.
std::vector<std::pair<std::string, std::string>> settings(const DatasetSourceOptions& o,
                                                           std::int64_t dataset_size) {
  return {{"dataset_size", std::to_string(dataset_size)},
          {"seed", o.shuffle ? std::to_string(o.seed) : std::string("unshuffled")},
          {"shard", fmt::format("{}/{}{}", o.shard_index, o.shard_count, o.equal_shards ? " equal" : "")}};
}

}  // namespace

DataPosition position_in_shard(const DataPosition& position, std::int64_t index, std::int64_t count) {
  const std::string& saved = position.get("shard");  // "i/n equal"
  const std::string suffix = fmt::format("/{} equal", count);
  TRIB_CHECK(saved.size() > suffix.size() && saved.ends_with(suffix), InvalidArgument,
             "data position was taken in shard '{}', not in one of {} equal shards", saved, count);
  TRIB_CHECK(index >= 0 && index < count, InvalidArgument, "shard {} of {} does not exist", index, count);
  DataPosition out = position;
  out.set("shard", fmt::format("{}{}", index, suffix));
  return out;
}

std::vector<std::int64_t> shard_of(std::span<const std::int64_t> order, std::int64_t index,
                                   std::int64_t count, bool equal_shards) {
  TRIB_CHECK(count >= 1 && index >= 0 && index < count, InvalidArgument,
             "shard {} of {} does not exist: expected 0 <= index < count", index, count);
  const auto size = static_cast<std::int64_t>(order.size());
  const std::int64_t used = equal_shards ? size / count * count : size;
  std::vector<std::int64_t> part;
  part.reserve(static_cast<std::size_t>(used / count + 1));
  for (std::int64_t i = index; i < used; i += count) part.push_back(order[i]);
  return part;
}

DatasetSource::DatasetSource(std::shared_ptr<const Dataset> dataset, DatasetSourceOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  TRIB_CHECK(dataset_ != nullptr, InvalidArgument, "DatasetSource needs a dataset, got null");
  begin_epoch(0);
  shard_size_ = static_cast<std::int64_t>(order_.size());
}

void DatasetSource::begin_epoch(std::int64_t epoch) {
  epoch_ = epoch;
  cursor_ = 0;
  std::vector<std::int64_t> order;
  if (options_.shuffle) {
    order = seeded_permutation(dataset_->size(), options_.seed, static_cast<std::uint64_t>(epoch));
  } else {
    order.resize(static_cast<std::size_t>(dataset_->size()));
    std::iota(order.begin(), order.end(), std::int64_t{0});
  }
  order_ = shard_of(order, options_.shard_index, options_.shard_count, options_.equal_shards);
}

std::optional<Batch> DatasetSource::next(std::int64_t max_rows) {
  TRIB_CHECK(max_rows >= 1, InvalidArgument, "DatasetSource::next: max_rows {} < 1", max_rows);
  if (cursor_ == shard_size_) {
    begin_epoch(epoch_ + 1);
    return std::nullopt;
  }
  const std::int64_t rows = std::min(max_rows, shard_size_ - cursor_);
  Batch batch = dataset_->gather(std::span(order_).subspan(cursor_, rows));
  cursor_ += rows;
  return batch;
}

DataPosition DatasetSource::position() const {
  DataPosition position;
  position.set_int("epoch", epoch_);
  position.set_int("cursor", cursor_);
  for (auto& [key, value] : settings(options_, dataset_->size())) position.set(key, std::move(value));
  return position;
}

void DatasetSource::seek(const DataPosition& position) {
  for (const auto& [key, value] : settings(options_, dataset_->size())) {
    const std::string& saved = position.get(key);
    TRIB_CHECK(saved == value, InvalidArgument,
               "data position was saved with {}={} but this source has {}={}", key, saved, key, value);
  }
  const std::int64_t epoch = position.get_int("epoch");
  const std::int64_t cursor = position.get_int("cursor");
  TRIB_CHECK(epoch >= 0 && cursor >= 0 && cursor <= shard_size_, InvalidArgument,
             "data position epoch={} cursor={} is outside this source's {} examples per epoch", epoch,
             cursor, shard_size_);
  if (epoch != epoch_) begin_epoch(epoch);
  cursor_ = cursor;
}

}  // namespace trib::data
