#include "stream/metrics_relay.h"

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::stream {

namespace {

std::string row_key(int worker, std::int64_t n) { return fmt::format("stream/metrics/{}/{}", worker, n); }
std::string taken_key(int worker) { return fmt::format("stream/metrics/taken/{}", worker); }

}  // namespace

MetricsRelay::MetricsRelay(int worker, int workers, Publish publish, Lookup lookup)
    : worker_(worker), workers_(workers), publish_(std::move(publish)), lookup_(std::move(lookup)),
      received_(static_cast<std::size_t>(std::max(workers, 1)), 0) {
  TRIB_CHECK(workers_ == 1 || (publish_ && lookup_), InvalidArgument,
             "metrics of a stream job with {} workers need the coordinator's store", workers_);
  // A relaunched worker: its lost process's rows stay where the chief reads them; go on after.
  if (workers_ > 1 && worker_ != 0)
    while (lookup_(row_key(worker_, sent_))) ++sent_;
  // A chief relaunched in place: its lost process wrote the rows it took.
  if (workers_ > 1 && worker_ == 0)
    for (int w = 1; w < workers_; ++w)
      if (std::optional<std::string> n = lookup_(taken_key(w))) received_[w] = std::stoll(*n);
}

void MetricsRelay::send(const std::string& row) {
  if (workers_ == 1 || worker_ == 0) return;
  publish_(row_key(worker_, sent_++), row);
}

std::vector<std::string> MetricsRelay::receive() {
  std::vector<std::string> rows;
  if (workers_ == 1) return rows;
  for (int w = 1; w < workers_; ++w) {
    const std::int64_t before = received_[w];
    while (std::optional<std::string> row = lookup_(row_key(w, received_[w]))) {
      rows.push_back(std::move(*row));
      ++received_[w];
    }
    if (received_[w] != before) publish_(taken_key(w), std::to_string(received_[w]));
  }
  return rows;
}

}  // namespace trib::stream
