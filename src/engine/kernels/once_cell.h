// A value built on first use and then shared by every run and thread. Op objects are
// immutable, one per graph node, with shapes fixed at build time; they keep their oneDNN
// primitives in mutable OnceCells so a primitive is created once and reused every step.
#pragma once

#include <mutex>
#include <optional>

namespace trib::kernels {

template <typename T>
class OnceCell {
 public:
  // Returns the value, building it with make() the first time. If make() throws, nothing is
  // stored and the next call tries again.
  template <typename Make>
  const T& get(Make&& make) const {
    std::call_once(once_, [&] { value_.emplace(make()); });
    return *value_;
  }

 private:
  mutable std::once_flag once_;
  mutable std::optional<T> value_;
};

}  // namespace trib::kernels
