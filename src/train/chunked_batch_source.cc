#include "trib/train/chunked_batch_source.h"

#include <numeric>
#include <span>
#include <thread>

#include <nlohmann/json.hpp>

#include "data/permutation.h"
#include "trib/core/error.h"

namespace trib::train {

std::int64_t whole_batches(std::int64_t examples, const config::JobConfig& job) {
  const std::int64_t n = examples / job.training.batch;
  TRIB_CHECK(n > 0, InvalidArgument, "training.batch {} is larger than the training set ({} examples)",
             job.training.batch, examples);
  return n;
}

ChunkedBatchSource::ChunkedBatchSource(std::shared_ptr<const data::Dataset> dataset, ChunkedSourceOptions options)
    : dataset_(std::move(dataset)), o_(std::move(options)) {
  TRIB_CHECK(dataset_ != nullptr && o_.batch > 0 && o_.chunk_batches > 0 && o_.claim, InvalidArgument,
             "ChunkedBatchSource needs a dataset, a batch size, a chunk size and a way to claim chunks");
  batches_per_epoch_ = dataset_->size() / o_.batch;
  TRIB_CHECK(batches_per_epoch_ > 0, InvalidArgument, "training.batch {} is larger than the training set ({} examples)",
             o_.batch, dataset_->size());
}

const std::vector<std::int64_t>& ChunkedBatchSource::order_of(std::int64_t epoch) {
  if (epoch == order_epoch_) return order_;
  if (o_.shuffle) {
    order_ = data::seeded_permutation(dataset_->size(), o_.seed, static_cast<std::uint64_t>(epoch));
  } else {
    order_.resize(static_cast<std::size_t>(dataset_->size()));
    std::iota(order_.begin(), order_.end(), std::int64_t{0});
  }
  order_epoch_ = epoch;
  return order_;
}

ChunkedBatchSource::Claimed ChunkedBatchSource::claim() {
  nlohmann::json ask{{"batches_per_epoch", batches_per_epoch_},
                     {"chunk_batches", o_.chunk_batches},
                     {"total_batches", o_.total_batches},
                     {"want", 1}};
  const std::string text = o_.claim(ask.dump());
  nlohmann::json r = nlohmann::json::parse(text, nullptr, false);
  TRIB_CHECK(r.is_object() && r.value("chunks", nlohmann::json()).is_array() &&
                 r.value("answer", nlohmann::json()).is_string(),
             InvalidArgument, "parameter server 0 answered a data claim with '{}'", text);
  for (const nlohmann::json& c : r["chunks"]) {
    TRIB_CHECK(c.is_array() && c.size() == 4, InvalidArgument, "parameter server 0 granted a malformed chunk '{}'",
               c.dump());
    Held h{c[0].get<std::int64_t>(), c[1].get<std::int64_t>(), c[2].get<std::int64_t>(), c[3].get<std::int64_t>()};
    TRIB_CHECK(h.epoch >= 0 && h.next >= 0 && h.next <= h.end && h.end <= batches_per_epoch_, InvalidArgument,
               "parameter server 0 granted batches [{}, {}) of epoch {}, outside the {} of an epoch", h.next, h.end,
               h.epoch, batches_per_epoch_);
    chunks_.push_back(h);
  }
  const std::string answer = r["answer"];
  if (!chunks_.empty()) return Claimed::granted;
  return answer == "wait" ? Claimed::wait : Claimed::exhausted;
}

std::optional<data::Batch> ChunkedBatchSource::next() {
  for (;;) {
    if (!chunks_.empty()) {
      Held& h = chunks_.front();
      if (h.next == h.end) {
        chunks_.pop_front();
        continue;
      }
      const std::int64_t b = h.next++;
      last_ = h;
      const std::vector<std::int64_t>& order = order_of(h.epoch);
      return dataset_->gather(std::span(order).subspan(static_cast<std::size_t>(b * o_.batch),
                                                       static_cast<std::size_t>(o_.batch)));
    }
    switch (claim()) {
      case Claimed::granted: continue;
      case Claimed::exhausted: return std::nullopt;  // every batch of the job is read
      case Claimed::wait: std::this_thread::sleep_for(o_.wait_poll); continue;
    }
  }
}

std::optional<data::DataPosition> ChunkedBatchSource::position() const {
  data::DataPosition p;
  if (last_) p.set("chunk", fmt::format("{}:{}:{}:{}", last_->epoch, last_->index, last_->next, last_->end));
  p.set_int("dataset_size", dataset_->size());
  return p;
}

}  // namespace trib::train
