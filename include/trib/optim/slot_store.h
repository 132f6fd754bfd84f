// Optimizer state ("slots": momentum buffers, Adam's m and v, step counts) kept apart from
// the variables, keyed by (variable name, slot name). Keeping it apart is what lets a
// parameter server own both the variables and their slots while the optimizer object stays
// stateless and shared; and what lets a checkpoint save the slots as ordinary tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trib/core/tensor.h"

namespace trib {

class SlotStore {
 public:
  // Slot tensors in a checkpoint are named "<prefix><variable>/<slot>". Variable names may
  // contain '/', slot names may not, so the name splits at its last '/'.
  static constexpr std::string_view kDefaultPrefix = "slot/";

  SlotStore() = default;
  SlotStore(const SlotStore&) = delete;
  SlotStore& operator=(const SlotStore&) = delete;

  // The slot, created on first use as a tensor of `dtype` and `shape` filled with `init`.
  // Throws InvalidArgument if the slot exists with another dtype or shape (the variable was
  // replaced by one of another shape) or if the slot name contains '/'. The reference stays
  // valid until the variable's slots are erased or the store is cleared; looking up an
  // existing slot does not allocate (a Tensor copy would, for its shape).
  Tensor& get_or_create(std::string_view var, std::string_view slot, DType dtype, const Shape& shape,
                        float init = 0.0f);
  // Throws NotFound naming the variable and slot.
  const Tensor& get(std::string_view var, std::string_view slot) const;
  bool contains(std::string_view var, std::string_view slot) const;
  // Adds or replaces a slot.
  void set(std::string_view var, std::string_view slot, Tensor value);
  // Drops every slot of one variable (for example when it is re-initialised).
  void erase(std::string_view var);
  void clear();

  // (variable, slot) pairs, sorted.
  std::vector<std::pair<std::string, std::string>> keys() const;
  std::size_t size() const;

  // Every slot as a named tensor, "<prefix><var>/<slot>", sharing storage with the store.
  std::map<std::string, Tensor> to_tensors(std::string_view prefix = kDefaultPrefix) const;
  // Adds the tensors whose names start with `prefix` (others are ignored) as slots, copying
  // them. Throws InvalidArgument naming a tensor whose name has no "<var>/<slot>" after the
  // prefix. Returns how many slots were loaded.
  std::size_t load_tensors(const std::map<std::string, Tensor>& tensors,
                           std::string_view prefix = kDefaultPrefix);

  // Scratch memory for sparse updates of one variable, reused between steps so that an
  // update allocates only the first time it sees a larger batch of rows. Not serialised.
  struct SparseScratch {
    std::vector<std::int64_t> order;    // positions into the indices, sorted by row
    std::vector<std::int64_t> offsets;  // first element of each distinct row, ascending
    std::vector<float> summed;          // one summed gradient row per distinct row
  };
  SparseScratch& scratch(std::string_view var);

 private:
  using Slots = std::map<std::string, Tensor, std::less<>>;
  // Guards the maps only: updates of different variables may run on different threads, but
  // updates of one variable must not run concurrently (they write the same memory anyway).
  mutable std::mutex mu_;
  std::map<std::string, Slots, std::less<>> slots_;
  std::map<std::string, SparseScratch, std::less<>> scratch_;
};

}  // namespace trib
