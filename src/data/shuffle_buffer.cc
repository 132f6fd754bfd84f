#include "trib/data/shuffle_buffer.h"

#include <algorithm>

#include "trib/core/error.h"
#include "data/permutation.h"

namespace trib::data {
namespace {

constexpr std::string_view kCapacity = "shuffle_buffer.capacity";
constexpr std::string_view kSeed = "shuffle_buffer.seed";
constexpr std::string_view kWindow = "shuffle_buffer.window";
constexpr std::string_view kLoaded = "shuffle_buffer.loaded";
constexpr std::string_view kEmitted = "shuffle_buffer.emitted";
constexpr std::string_view kOwesEnd = "shuffle_buffer.owes_end";

}  // namespace

ShuffleBuffer::ShuffleBuffer(std::unique_ptr<ExampleSource> upstream, std::int64_t capacity,
                             std::uint64_t seed)
    : upstream_(std::move(upstream)), capacity_(capacity), seed_(seed) {
  TRIB_CHECK(upstream_ != nullptr, InvalidArgument, "ShuffleBuffer needs an upstream source, got null");
  TRIB_CHECK(capacity_ >= 1, InvalidArgument, "shuffle buffer capacity {} < 1", capacity_);
}

void ShuffleBuffer::load_window() {
  window_start_ = upstream_->position();
  std::vector<Batch> chunks;
  std::int64_t rows = 0;
  while (rows < capacity_) {
    std::optional<Batch> chunk = upstream_->next(capacity_ - rows);
    if (!chunk) {
      owes_end_ = true;
      break;
    }
    TRIB_CHECK(chunk->rows() >= 1 && chunk->rows() <= capacity_ - rows, InvalidArgument,
               "upstream source returned {} rows when asked for 1..{}", chunk->rows(), capacity_ - rows);
    rows += chunk->rows();
    chunks.push_back(std::move(*chunk));
  }
  rows_ = concat_rows(chunks);
  order_ = seeded_permutation(rows, seed_, window_);
  emitted_ = 0;
  loaded_ = true;
}

void ShuffleBuffer::unload_window() {
  loaded_ = false;
  rows_ = Batch();
  order_.clear();
  emitted_ = 0;
  ++window_;
}

std::optional<Batch> ShuffleBuffer::next(std::int64_t max_rows) {
  TRIB_CHECK(max_rows >= 1, InvalidArgument, "ShuffleBuffer::next: max_rows {} < 1", max_rows);
  if (!loaded_) {
    if (owes_end_) {
      owes_end_ = false;
      return std::nullopt;
    }
    load_window();
  }
  const auto size = static_cast<std::int64_t>(order_.size());
  if (emitted_ == size) {  // only an empty window: upstream's pass ended at once
    unload_window();
    owes_end_ = false;
    return std::nullopt;
  }
  const std::int64_t count = std::min(max_rows, size - emitted_);
  Batch out = gather_rows(rows_, std::span(order_).subspan(emitted_, count));
  emitted_ += count;
  if (emitted_ == size) unload_window();
  return out;
}

DataPosition ShuffleBuffer::position() const {
  // With a window loaded, resuming must re-read it, so upstream's part of the position is
  // where the window began; otherwise it is where upstream stands now.
  DataPosition position = loaded_ ? window_start_ : upstream_->position();
  position.set_int(kCapacity, capacity_);
  position.set_uint(kSeed, seed_);
  position.set_uint(kWindow, window_);
  position.set_int(kLoaded, loaded_ ? 1 : 0);
  position.set_int(kEmitted, emitted_);
  position.set_int(kOwesEnd, owes_end_ ? 1 : 0);
  return position;
}

void ShuffleBuffer::seek(const DataPosition& position) {
  TRIB_CHECK(position.get_int(kCapacity) == capacity_ && position.get_uint(kSeed) == seed_,
             InvalidArgument,
             "data position was saved by a shuffle buffer with capacity {} and seed {}, this one has "
             "capacity {} and seed {}",
             position.get(kCapacity), position.get(kSeed), capacity_, seed_);
  upstream_->seek(position);
  unload_window();
  window_ = position.get_uint(kWindow);
  owes_end_ = position.get_int(kOwesEnd) != 0;
  if (position.get_int(kLoaded) == 0) return;

  owes_end_ = false;  // re-reading the window finds upstream's end again if it was there
  load_window();
  const std::int64_t emitted = position.get_int(kEmitted);
  TRIB_CHECK(emitted >= 0 && emitted < static_cast<std::int64_t>(order_.size()), InvalidArgument,
             "data position says {} rows of shuffle window {} were handed out, but re-reading it "
             "from upstream gives {} rows: upstream data changed since the position was saved",
             emitted, window_, order_.size());
  emitted_ = emitted;
}

}  // namespace trib::data
