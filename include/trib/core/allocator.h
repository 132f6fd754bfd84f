// Memory for tensors. All tensor storage is 64-byte aligned (a cache line and an AVX-512
// register), owned by RAII, and may come from a pool that recycles buffers between steps.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace trib {

inline constexpr std::size_t kTensorAlignment = 64;

// A block of aligned bytes. It returns itself to its allocator when the last owner drops it.
class Storage;

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns a block of at least `bytes` bytes, aligned to kTensorAlignment; never null.
  virtual std::shared_ptr<Storage> allocate(std::size_t bytes) = 0;
};

// Plain aligned heap allocation; what tensors use when no pool is given.
Allocator& default_allocator();

class Storage {
 public:
  using Release = void (*)(void* owner, std::byte* data, std::size_t capacity);

  // Takes ownership of `data`; `release(owner, data, capacity)` runs on destruction.
  Storage(std::byte* data, std::size_t capacity, Release release, void* owner)
      : data_(data), capacity_(capacity), release_(release), owner_(owner) {}
  ~Storage() { release_(owner_, data_, capacity_); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::byte* data() const { return data_; }
  std::size_t capacity() const { return capacity_; }

 private:
  std::byte* data_;
  std::size_t capacity_;
  Release release_;
  void* owner_;
};

// Recycles blocks by size class (powers of two above 4 KiB, rounded to 64 B below), so that
// a training step's intermediates reuse the previous step's memory instead of calling the
// system allocator. Thread-safe. It tracks bytes in use and their peak, which is how the
// executor reports a step's peak memory. When the pool is owned by a shared_ptr (as the
// executor's is), every storage it hands out keeps it alive, so tensors may outlive their
// executor; otherwise the pool must outlive its storages.
class PoolAllocator : public Allocator, public std::enable_shared_from_this<PoolAllocator> {
 public:
  PoolAllocator() = default;
  ~PoolAllocator() override;
  std::shared_ptr<Storage> allocate(std::size_t bytes) override;

  std::size_t bytes_in_use() const { return in_use_.load(); }
  std::size_t peak_bytes() const { return peak_.load(); }
  // Starts a new peak measurement from the bytes in use now.
  void reset_peak() { peak_.store(in_use_.load()); }
  // Returns cached free blocks to the system.
  void trim();

 private:
  static void release(void* owner, std::byte* data, std::size_t capacity);
  std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<std::byte*>> free_;
  std::atomic<std::size_t> in_use_{0};
  std::atomic<std::size_t> peak_{0};
};

}  // namespace trib
