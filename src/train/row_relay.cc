#include "train/row_relay.h"

#include <fmt/format.h>

namespace trib::train {

RowRelay::RowRelay(int worker, int workers, Publish publish, Lookup lookup)
    : worker_(worker), workers_(workers), publish_(std::move(publish)), lookup_(std::move(lookup)),
      received_(static_cast<std::size_t>(std::max(workers, 1)), 0) {}

void RowRelay::send(const std::string& row) {
  if (!publish_) return;
  publish_(fmt::format("metrics/rows/{}/{}", worker_, sent_++), row);
}

std::vector<std::string> RowRelay::receive() {
  std::vector<std::string> rows;
  if (!lookup_) return rows;
  for (int w = 0; w < workers_; ++w) {
    if (w == worker_) continue;
    for (;;) {
      std::optional<std::string> row = lookup_(fmt::format("metrics/rows/{}/{}", w, received_[w]));
      if (!row) break;
      rows.push_back(std::move(*row));
      ++received_[w];
    }
  }
  return rows;
}

}  // namespace trib::train
