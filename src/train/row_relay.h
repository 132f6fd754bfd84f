// Carries JSON rows of workers other than the chief to it, through the coordinator's store:
// worker w's row n is the key "metrics/rows/<w>/<n>"; the chief takes, per worker and in
// order, whatever has arrived whenever it asks. (The same scheme as a stream job's
// MetricsRelay, stream/metrics_relay.h, which lives below the Kafka client this library
// does not link.)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trib::train {

class RowRelay {
 public:
  using Publish = std::function<void(const std::string& key, const std::string& value)>;
  using Lookup = std::function<std::optional<std::string>(const std::string& key)>;

  RowRelay(int worker, int workers, Publish publish, Lookup lookup);
  // A worker other than the chief: one row.
  void send(const std::string& row);
  // The chief: the rows the others sent since the last call, worker by worker in order.
  std::vector<std::string> receive();

 private:
  int worker_, workers_;
  Publish publish_;
  Lookup lookup_;
  std::int64_t sent_ = 0;
  std::vector<std::int64_t> received_;
};

}  // namespace trib::train
