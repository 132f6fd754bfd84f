// Carries the metrics rows of a stream job's workers to the chief, which alone writes the run
// directory's metrics.jsonl: each worker's rows travel through the coordinator's key-value
// store as "stream/metrics/<worker>/<n>" (n = 0, 1, ...), and the chief collects, per worker
// and in order, whatever has arrived whenever it reports (and once more at the end, after
// every worker has handed over its final offsets, so no row is left behind). The chief notes
// how many rows of each worker it has taken ("stream/metrics/taken/<worker>"): a chief
// relaunched in place goes on after them instead of writing them again.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trib::stream {

class MetricsRelay {
 public:
  using Publish = std::function<void(const std::string& key, const std::string& value)>;
  using Lookup = std::function<std::optional<std::string>(const std::string& key)>;

  // One worker (or no store): send() is never needed and receive() returns nothing.
  MetricsRelay(int worker, int workers, Publish publish, Lookup lookup);

  // A worker other than the chief: one row (a JSON line).
  void send(const std::string& row);
  // The chief: the rows other workers sent since the last call, worker by worker in order.
  std::vector<std::string> receive();

 private:
  int worker_;
  int workers_;
  Publish publish_;
  Lookup lookup_;
  std::int64_t sent_ = 0;
  std::vector<std::int64_t> received_;  // per worker, rows taken so far
};

}  // namespace trib::stream
