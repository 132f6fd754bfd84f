// The coordinator's key-value store in memory, for StreamSync tests: workers are threads that
// share it, as they would share the coordinator's.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "trib/train/distribution.h"

namespace trib::train_stream::testing {

struct Store {
  std::mutex mu;
  std::map<std::string, std::string> values;
  void set(const std::string& k, const std::string& v) {
    std::lock_guard lock(mu);
    values[k] = v;
  }
  std::optional<std::string> get(const std::string& k) {
    std::lock_guard lock(mu);
    auto it = values.find(k);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
};

// Worker `index` of `workers`, publishing to and looking up in `store`.
inline train::Distribution worker(Store& store, int index, int workers = 2) {
  train::Distribution d;
  d.worker_index = index;
  d.workers = workers;
  d.publish = [&store](const std::string& k, const std::string& v) { store.set(k, v); };
  d.lookup = [&store](const std::string& k) { return store.get(k); };
  return d;
}

}  // namespace trib::train_stream::testing
