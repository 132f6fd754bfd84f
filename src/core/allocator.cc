#include "trib/core/allocator.h"

#include <bit>
#include <cstdlib>
#include <new>

namespace trib {
namespace {

std::byte* aligned_alloc_or_throw(std::size_t bytes) {
  std::size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}

void free_release(void*, std::byte* data, std::size_t) { std::free(data); }

class HeapAllocator : public Allocator {
 public:
  std::shared_ptr<Storage> allocate(std::size_t bytes) override {
    return std::make_shared<Storage>(aligned_alloc_or_throw(bytes), bytes, &free_release, nullptr);
  }
};

// Size classes: exact multiples of 64 B up to 4 KiB, powers of two above, so that a step's
// slightly different sizes still hit the cache while waste stays under 2x.
std::size_t size_class(std::size_t bytes) {
  if (bytes <= 4096) return (bytes + 63) / 64 * 64 + (bytes == 0 ? 64 : 0);
  return std::bit_ceil(bytes);
}

}  // namespace

Allocator& default_allocator() {
  // Stateless, so one shared instance is a constant rather than a singleton with state.
  static HeapAllocator heap;
  return heap;
}

PoolAllocator::~PoolAllocator() { trim(); }

std::shared_ptr<Storage> PoolAllocator::allocate(std::size_t bytes) {
  std::size_t cls = size_class(bytes);
  std::byte* data = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      data = it->second.back();
      it->second.pop_back();
    }
  }
  if (data == nullptr) data = aligned_alloc_or_throw(cls);
  std::size_t now = in_use_.fetch_add(cls) + cls;
  std::size_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  // A tensor may outlive the executor that made it (a fetched value, a test's result), so
  // each block keeps its pool alive until it has been handed back. A pool not owned by a
  // shared_ptr cannot be kept alive this way; its owner then guarantees the lifetime.
  struct Pooled {
    Pooled(std::shared_ptr<PoolAllocator> p, std::byte* data, std::size_t cls)
        : pool(std::move(p)), storage(data, cls, &PoolAllocator::release, pool.get()) {}
    std::shared_ptr<PoolAllocator> pool;  // destroyed after `storage`, which releases into it
    Storage storage;
  };
  std::shared_ptr<PoolAllocator> self = weak_from_this().lock();
  if (!self) return std::make_shared<Storage>(data, cls, &PoolAllocator::release, this);
  auto holder = std::make_shared<Pooled>(std::move(self), data, cls);
  return std::shared_ptr<Storage>(holder, &holder->storage);
}

void PoolAllocator::release(void* owner, std::byte* data, std::size_t capacity) {
  auto* self = static_cast<PoolAllocator*>(owner);
  self->in_use_.fetch_sub(capacity);
  std::lock_guard lock(self->mu_);
  self->free_[capacity].push_back(data);
}

void PoolAllocator::trim() {
  std::lock_guard lock(mu_);
  for (auto& [cls, blocks] : free_)
    for (std::byte* b : blocks) std::free(b);
  free_.clear();
}

}  // namespace trib
