// Values built once per memory descriptor: the primitives of a kernel that accepts inputs
// in any layout, one per layout it has seen (in practice one, since a node's producer
// always writes the same layout). Shared by every run and thread, like OnceCell.
#pragma once

#include <deque>
#include <mutex>
#include <utility>

#include <dnnl.hpp>

namespace trib::kernels {

template <typename T>
class DescCache {
 public:
  template <typename Make>
  const T& get(const dnnl::memory::desc& key, Make&& make) const {
    std::lock_guard lock(mu_);
    for (const auto& [k, v] : entries_)
      if (k == key) return v;
    entries_.emplace_back(key, make());
    return entries_.back().second;
  }

 private:
  mutable std::mutex mu_;
  mutable std::deque<std::pair<dnnl::memory::desc, T>> entries_;  // references stay valid
};

}  // namespace trib::kernels
