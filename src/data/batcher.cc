#include "trib/data/batcher.h"

#include <vector>

#include "trib/core/error.h"

namespace trib::data {
namespace {

constexpr std::string_view kOwesEnd = "batcher.owes_end";

}  // namespace

Batcher::Batcher(std::unique_ptr<ExampleSource> upstream, std::int64_t batch_size, bool drop_last)
    : upstream_(std::move(upstream)), batch_size_(batch_size), drop_last_(drop_last) {
  TRIB_CHECK(upstream_ != nullptr, InvalidArgument, "Batcher needs an upstream source, got null");
  TRIB_CHECK(batch_size_ >= 1, InvalidArgument, "batch size {} < 1", batch_size_);
}

std::optional<Batch> Batcher::next() {
  if (owes_end_) {
    owes_end_ = false;
    return std::nullopt;
  }
  // Asking upstream for exactly the rows still missing means nothing is ever left over between
  // calls, so the position needs no buffered examples.
  std::vector<Batch> parts;
  std::int64_t rows = 0;
  while (rows < batch_size_) {
    std::optional<Batch> part = upstream_->next(batch_size_ - rows);
    if (!part) {
      if (rows == 0 || drop_last_) return std::nullopt;
      owes_end_ = true;
      break;
    }
    TRIB_CHECK(part->rows() >= 1 && part->rows() <= batch_size_ - rows, InvalidArgument,
               "upstream source returned {} rows when asked for 1..{}", part->rows(), batch_size_ - rows);
    rows += part->rows();
    parts.push_back(std::move(*part));
  }
  if (parts.size() == 1) return std::move(parts.front());
  return concat_rows(parts);
}

DataPosition Batcher::position() const {
  DataPosition position = upstream_->position();
  position.set_int(kOwesEnd, owes_end_ ? 1 : 0);
  return position;
}

void Batcher::seek(const DataPosition& position) {
  upstream_->seek(position);
  owes_end_ = position.get_int(kOwesEnd) != 0;
}

}  // namespace trib::data
