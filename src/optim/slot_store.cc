#include "trib/optim/slot_store.h"

namespace trib {

Tensor& SlotStore::get_or_create(std::string_view var, std::string_view slot, DType dtype,
                                 const Shape& shape, float init) {
  std::lock_guard lock(mu_);
  auto v = slots_.find(var);
  if (v != slots_.end()) {
    auto s = v->second.find(slot);
    if (s != v->second.end()) {
      Tensor& t = s->second;
      TRIB_CHECK(t.dtype() == dtype && t.shape() == shape, InvalidArgument,
                 "optimizer slot '{}' of variable '{}' is {}, but the variable needs {}{}", slot, var,
                 t.spec_string(), dtype_name(dtype), shape.to_string());
      return t;
    }
  }
  TRIB_CHECK(slot.find('/') == std::string_view::npos && !slot.empty(), InvalidArgument,
             "optimizer slot name '{}' of variable '{}' must be non-empty and free of '/'", slot, var);
  if (v == slots_.end()) v = slots_.emplace(std::string(var), Slots{}).first;
  Tensor t = Tensor::zeros(dtype, shape);
  if (init != 0.0f) t.fill(init);
  return v->second.emplace(std::string(slot), std::move(t)).first->second;
}

const Tensor& SlotStore::get(std::string_view var, std::string_view slot) const {
  std::lock_guard lock(mu_);
  auto v = slots_.find(var);
  if (v != slots_.end()) {
    auto s = v->second.find(slot);
    if (s != v->second.end()) return s->second;
  }
  throw NotFound(fmt::format("no optimizer slot '{}' for variable '{}'", slot, var));
}

bool SlotStore::contains(std::string_view var, std::string_view slot) const {
  std::lock_guard lock(mu_);
  auto v = slots_.find(var);
  return v != slots_.end() && v->second.find(slot) != v->second.end();
}

void SlotStore::set(std::string_view var, std::string_view slot, Tensor value) {
  TRIB_CHECK(slot.find('/') == std::string_view::npos && !slot.empty(), InvalidArgument,
             "optimizer slot name '{}' of variable '{}' must be non-empty and free of '/'", slot, var);
  std::lock_guard lock(mu_);
  auto v = slots_.find(var);
  if (v == slots_.end()) v = slots_.emplace(std::string(var), Slots{}).first;
  v->second.insert_or_assign(std::string(slot), std::move(value));
}

void SlotStore::erase(std::string_view var) {
  std::lock_guard lock(mu_);
  if (auto v = slots_.find(var); v != slots_.end()) slots_.erase(v);
  if (auto s = scratch_.find(var); s != scratch_.end()) scratch_.erase(s);
}

void SlotStore::clear() {
  std::lock_guard lock(mu_);
  slots_.clear();
  scratch_.clear();
}

std::vector<std::pair<std::string, std::string>> SlotStore::keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [var, slots] : slots_) {
    for (const auto& [slot, tensor] : slots) out.emplace_back(var, slot);
  }
  return out;
}

std::size_t SlotStore::size() const {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (const auto& [var, slots] : slots_) n += slots.size();
  return n;
}

std::map<std::string, Tensor> SlotStore::to_tensors(std::string_view prefix) const {
  std::lock_guard lock(mu_);
  std::map<std::string, Tensor> out;
  for (const auto& [var, slots] : slots_) {
    for (const auto& [slot, tensor] : slots) out.emplace(fmt::format("{}{}/{}", prefix, var, slot), tensor);
  }
  return out;
}

std::size_t SlotStore::load_tensors(const std::map<std::string, Tensor>& tensors, std::string_view prefix) {
  std::size_t loaded = 0;
  for (const auto& [name, tensor] : tensors) {
    std::string_view key(name);
    if (!key.starts_with(prefix)) continue;
    key.remove_prefix(prefix.size());
    std::size_t slash = key.rfind('/');
    TRIB_CHECK(slash != std::string_view::npos && slash > 0 && slash + 1 < key.size(), InvalidArgument,
               "tensor '{}' is not an optimizer slot: expected '{}<variable>/<slot>'", name, prefix);
    set(key.substr(0, slash), key.substr(slash + 1), tensor.clone());
    ++loaded;
  }
  return loaded;
}

SlotStore::SparseScratch& SlotStore::scratch(std::string_view var) {
  std::lock_guard lock(mu_);
  auto s = scratch_.find(var);
  if (s == scratch_.end()) s = scratch_.emplace(std::string(var), SparseScratch{}).first;
  // std::map nodes never move, so the reference stays valid after the lock is released.
  return s->second;
}

}  // namespace trib
